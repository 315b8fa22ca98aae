#!/bin/sh
# uzswap bench savings `redis-hot`: a redis-server on a Unix socket in the
# current folder loaded with KEYS keys `key:%012d` (a RESP file), then
# LOOKUPS GETs by redis-benchmark, 99% of them to the hottest 5% of the
# keys; prints DBSIZE and DEBUG DIGEST (the same under any pager).
# Usage: redis_hot.sh KEYS LOAD.resp LOOKUPS
set -eu
keys=$1
load=$2
lookups=$3
dir=$(pwd)
sock="$dir/redis.sock"
server=""

cli() { redis-cli -s "$sock" "$@"; }
trap 'if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi' EXIT

redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 --dir "$dir" \
    --save '' --appendonly no --daemonize no \
    --enable-debug-command local --logfile "$dir/redis.log" &
server=$!
i=0
until cli PING >/dev/null 2>&1; do
    i=$((i + 1))
    if [ "$i" -gt 6000 ] || ! kill -0 "$server" 2>/dev/null; then
        echo "redis-server did not start" >&2
        if [ -f "$dir/redis.log" ]; then tail -5 "$dir/redis.log" >&2; fi
        exit 1
    fi
    sleep 0.01
done
cli --pipe <"$load" >pipe.log
grep '^errors: ' pipe.log
hot=$((keys / 20))
# __rand_int__ is a 12-digit number under -r: the keys loaded above.
redis-benchmark -s "$sock" -c 4 -P 16 -n "$((lookups * 99 / 100))" -r "$hot" -q \
    GET 'key:__rand_int__' >bench-hot.log
redis-benchmark -s "$sock" -c 4 -P 16 -n "$((lookups / 100))" -r "$keys" -q \
    GET 'key:__rand_int__' >bench-all.log
echo "dbsize $(cli DBSIZE) digest $(cli DEBUG DIGEST)"
cli SHUTDOWN NOSAVE >/dev/null 2>&1 || true
wait "$server" 2>/dev/null || true
server=""
echo ok
