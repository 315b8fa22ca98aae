"""Fills MIB MiB with random (incompressible) bytes, 1 MiB at a time,
hashing each slice as it goes, then reads everything back and checks it.
Prints the peak RSS it had before its big allocation (the interpreter's
own memory), then `incompressible.py: ok`."""
import hashlib
import os
import resource
import sys

mib = int(sys.argv[1])
print("baseline_rss_bytes", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, flush=True)
chunk = 1 << 20
buf = bytearray(mib * chunk)
written = hashlib.sha256()
for i in range(mib):
    piece = os.urandom(chunk)
    written.update(piece)
    buf[i * chunk:(i + 1) * chunk] = piece
for _ in range(2):
    if hashlib.sha256(buf).digest() != written.digest():
        sys.exit("incompressible.py: the bytes read back differ from those written")
print("incompressible.py: ok")
