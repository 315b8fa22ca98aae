# uzswap compat `python-hash`: read a whole file into one bytes object and
# hash it. Usage: python_hash.py FILE
import hashlib
import sys

with open(sys.argv[1], "rb") as f:
    data = f.read()
print(len(data), hashlib.sha256(data).hexdigest())
