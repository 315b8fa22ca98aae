# uzswap compat `python-list`: many small strings in a list and a dict
# (pymalloc arenas and a large list array), then a checksum over them.
# Usage: python_list.py COUNT
import hashlib
import sys

count = int(sys.argv[1])
fill = "abcdefghijklmnopqrstuvwxyz"
words = [
    f"{i:09d}:{(i * 2654435761) % 4294967296:08x}:{fill[i % 26] * (i % 29)}"
    for i in range(count)
]
index = {w: i for i, w in enumerate(words) if i % 3 == 0}
digest = hashlib.sha256()
for w in words:
    digest.update(w.encode())
total = sum(index[words[i]] for i in range(0, count, 3))
print(count, len(index), total, digest.hexdigest())
