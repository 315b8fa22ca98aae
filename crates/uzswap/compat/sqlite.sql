-- uzswap compat `sqlite`: build a database of @ROWS@ rows with an index in a
-- large page cache, check it and checksum it. @ROWS@ and @CACHE_KIB@ are
-- filled in by `uzswap compat`.
PRAGMA page_size = 4096;
PRAGMA journal_mode = OFF;
PRAGMA synchronous = OFF;
PRAGMA temp_store = MEMORY;
PRAGMA cache_size = -@CACHE_KIB@;
CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < @ROWS@)
INSERT INTO t
SELECT x,
       printf('%08x', (x * 2654435761) % 4294967296),
       printf('%d:%s:%s', x, hex((x * x) % 1000003),
              substr('lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua',
                     1 + x % 40, 20 + x % 60))
FROM c;
CREATE INDEX t_k ON t(k);
PRAGMA integrity_check;
SELECT count(*), sum(length(v)), min(k), max(k) FROM t;
SELECT hex(sha3_query('SELECT * FROM t ORDER BY k, id'));
