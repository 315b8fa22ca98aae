#!/bin/sh
# uzswap compat `redis`: a redis-server on a Unix socket in the current
# folder (no TCP: port 0) loaded with DEBUG POPULATE and a RESP file, a
# BGSAVE, then a restart from the RDB; prints DBSIZE and DEBUG DIGEST
# before and after. Usage: redis.sh KEYS LOAD.resp
set -eu
keys=$1
load=$2
dir=$(pwd)
sock="$dir/redis.sock"
server=""

cli() { redis-cli -s "$sock" "$@"; }
stop() {
    if [ -n "$server" ]; then
        cli SHUTDOWN NOSAVE >/dev/null 2>&1 || true
        wait "$server" 2>/dev/null || true
        server=""
    fi
}
trap 'if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi' EXIT
# Waits until `INFO persistence` shows FIELD:VALUE (6000 tries, a minute or
# more), asking every 10 ms: coarser polls added up to 100 ms a wait to
# every run.
wait_for() {
    i=0
    until cli INFO persistence 2>/dev/null | tr -d '\r' | grep -qx "$1"; do
        i=$((i + 1))
        if [ "$i" -gt 6000 ]; then
            echo "redis: no $1 after 60 s (error)" >&2
            if [ -f "$dir/redis.log" ]; then tail -5 "$dir/redis.log" >&2; fi
            exit 1
        fi
        if ! kill -0 "$server" 2>/dev/null; then
            status=0
            wait "$server" || status=$?
            server=""
            if [ "$status" -gt 128 ]; then
                echo "redis-server killed by signal $((status - 128)) while starting" >&2
            else
                echo "redis-server exited with status $status while starting" >&2
            fi
            if [ -f "$dir/redis.log" ]; then tail -5 "$dir/redis.log" >&2; fi
            exit 1
        fi
        sleep 0.01
    done
}
start() {
    redis-server --port 0 --unixsocket "$sock" --unixsocketperm 700 --dir "$dir" \
        --dbfilename dump.rdb --save '' --appendonly no --daemonize no \
        --enable-debug-command local --logfile "$dir/redis.log" &
    server=$!
    wait_for loading:0
}
field() { cli INFO persistence | tr -d '\r' | grep "^$1:"; }

start
cli DEBUG POPULATE "$keys" key 100 >/dev/null
cli --pipe <"$load" >pipe.log
grep '^errors: ' pipe.log
size=$(cli DBSIZE)
digest=$(cli DEBUG DIGEST)
echo "before: dbsize $size digest $digest"
cli BGSAVE >/dev/null
wait_for rdb_bgsave_in_progress:0
status=$(field rdb_last_bgsave_status)
if [ "$status" != "rdb_last_bgsave_status:ok" ]; then
    echo "BGSAVE failed: $status" >&2
    if [ -f "$dir/redis.log" ]; then tail -5 "$dir/redis.log" >&2; fi
    exit 1
fi
stop
start
size2=$(cli DBSIZE)
digest2=$(cli DEBUG DIGEST)
echo "after restart: dbsize $size2 digest $digest2"
stop
if [ "$size" != "$size2" ] || [ "$digest" != "$digest2" ]; then
    echo "redis: the RDB did not restore the data" >&2
    exit 1
fi
echo ok
