# uzswap compat `numpy`: large uint64 and float64 arrays, arithmetic, a
# partial sort, sums and a hash of the result. Usage: numpy_sum.py ELEMENTS
import hashlib
import sys

import numpy as np

n = int(sys.argv[1])
x = np.arange(n, dtype=np.uint64)
x *= np.uint64(6364136223846793005)
x += np.uint64(1442695040888963407)
y = (x >> np.uint64(33)).astype(np.float64)
np.sqrt(y, out=y)
y *= 1.5
y += 7.0
head = np.sort(y[: n // 8])
print(n, int(x[::4097].sum(dtype=np.uint64)), repr(float(y.sum())), repr(float(head[n // 16])))
print(hashlib.sha256(memoryview(y)).hexdigest())
