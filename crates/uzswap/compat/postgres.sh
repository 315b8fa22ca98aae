#!/bin/sh
# uzswap compat `postgres`: a PostgreSQL server in the current folder
# (initdb, a Unix socket only, no TCP), a table of ROWS rows made by
# generate_series, then what a query does to a backend's private memory:
# a sort in memory (work_mem large enough for every row), a hash
# aggregate and an index build; prints digests of their results, the
# same under any pager. The server is started by this shell, not by
# pg_ctl, so that it and its backends stay in the run's process tree.
# PostgreSQL refuses to run as root: as root, the server and its tools
# run as user nobody (the folder is given to nobody).
# Usage: postgres.sh ROWS
set -eu
rows=$1
dir=$(pwd)
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$bin" ]; then
    echo "postgres: no /usr/lib/postgresql/*/bin" >&2
    exit 1
fi
as=""
if [ "$(id -u)" = 0 ]; then
    chown nobody "$dir"
    as="setpriv --reuid=nobody --regid=$(id -g nobody) --clear-groups"
fi
export PGHOST="$dir" PGDATABASE=postgres PGUSER=postgres
server=""
stop() {
    if [ -n "$server" ]; then
        # SIGINT: the fast shutdown (every backend ends, no checkpoint wait).
        kill -INT "$server" 2>/dev/null || true
        wait "$server" 2>/dev/null || true
        server=""
    fi
}
trap 'if [ -n "$server" ]; then kill -INT "$server" 2>/dev/null || true; fi' EXIT

$as "$bin/initdb" -D "$dir/pgdata" -U postgres -A trust --no-sync -E UTF8 --locale=C >"$dir/initdb.log" 2>&1 || {
    echo "postgres: initdb failed" >&2
    tail -5 "$dir/initdb.log" >&2
    exit 1
}
# shared_buffers at its floor: shared memory is not paged, and the
# program's memory is the backends' private memory.
$as "$bin/postgres" -D "$dir/pgdata" -k "$dir" -c listen_addresses= -c fsync=off \
    -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=1MB \
    -c work_mem=1GB -c maintenance_work_mem=1GB -c max_parallel_workers_per_gather=0 \
    -c max_parallel_maintenance_workers=0 -c autovacuum=off -c jit=off \
    >"$dir/server.log" 2>&1 &
server=$!
i=0
until $as "$bin/pg_isready" -q -h "$dir"; do
    i=$((i + 1))
    if [ "$i" -gt 6000 ] || ! kill -0 "$server" 2>/dev/null; then
        echo "postgres: the server did not start" >&2
        tail -5 "$dir/server.log" >&2
        exit 1
    fi
    sleep 0.01
done

$as /usr/bin/psql -X -qAt -v ON_ERROR_STOP=1 <<SQL
CREATE TABLE t AS
    SELECT i, md5(i::text) AS k, repeat(md5((i * 7)::text), 3) AS v
    FROM generate_series(1, $rows) AS i;
SELECT count(*), md5(string_agg(k || ':' || i, ',' ORDER BY k)) FROM t;
SELECT k, i FROM t ORDER BY v, k OFFSET $rows / 2 LIMIT 3;
SELECT md5(string_agg(g || ':' || n || ':' || s, ',' ORDER BY g))
    FROM (SELECT substr(k, 1, 4) AS g, count(*) AS n, sum(i) AS s FROM t GROUP BY 1) AS a;
CREATE INDEX t_v ON t (v);
SELECT i FROM t WHERE v = repeat(md5((($rows / 3) * 7)::text), 3);
SQL
stop
