"""A Python program for `uzswap run` tests: large bytearrays (malloc'd, so
paged), many small objects (pymalloc arenas, mmap'd), threads rewriting
their buffers while the runtime evicts; every byte is checked. Exit 0 when
all is well, 1 with a message otherwise. Usage: pagecheck.py [MiB]"""
import hashlib
import sys
import threading

MIB = int(sys.argv[1]) if len(sys.argv) > 1 else 48


def block(seed):
    """1 MiB of compressible, seed-specific content."""
    head = hashlib.sha256(str(seed).encode()).digest()
    return bytearray((head + bytes(32)) * (1 << 14))


def check(buf, seed, what):
    if buf != block(seed):
        bad = next(i for i, (a, b) in enumerate(zip(buf, block(seed))) if a != b)
        print(f"pagecheck.py: {what}: byte {bad} differs", file=sys.stderr)
        sys.exit(1)


errors = []


def worker(t, n):
    bufs = [(block(t * 1000 + i), t * 1000 + i) for i in range(n)]
    for rnd in range(3):
        for i, (buf, seed) in enumerate(bufs):
            if buf != block(seed):
                errors.append(f"thread {t} buffer {i} round {rnd}")
                return
            if (i + rnd) % 2 == 0:
                seed += 100000
                buf[:] = block(seed)
                bufs[i] = (buf, seed)


threads = [threading.Thread(target=worker, args=(t, MIB // 4)) for t in range(4)]
for th in threads:
    th.start()

# Small objects: pymalloc arenas, also large enough to be paged.
words = [f"word-{i}" * 3 for i in range(200_000)]
table = {i: i * i for i in range(100_000)}

for th in threads:
    th.join()
if errors:
    print("pagecheck.py: " + "; ".join(errors), file=sys.stderr)
    sys.exit(1)
for i in (0, 1, 99_999, 199_999):
    if words[i] != f"word-{i}" * 3:
        print(f"pagecheck.py: words[{i}] = {words[i]!r}", file=sys.stderr)
        sys.exit(1)
if any(table[i] != i * i for i in range(100_000)):
    print("pagecheck.py: table differs", file=sys.stderr)
    sys.exit(1)
big = block(42)
check(big, 42, "single block")
print("pagecheck.py: ok")
