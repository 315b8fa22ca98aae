# Python multiprocessing with the fork start method: a parent bytearray
# (far more than the limit) hashed by 4 workers; each must see every byte.
# Usage: mpfork.py MIB
import multiprocessing as mp, hashlib
import sys
N = (int(sys.argv[1]) if len(sys.argv) > 1 else 256) << 20
data = bytearray(N)
for i in range(0, N, 4096):
    data[i:i+8] = i.to_bytes(8, 'little')
ref = hashlib.sha256(data).hexdigest()
def work(k):
    return hashlib.sha256(data).hexdigest()
if __name__ == '__main__':
    ctx = mp.get_context('fork')
    p = ctx.Pool(4)
    res = p.map(work, range(4))
    # close + join: the workers end normally (and report their counters).
    p.close()
    p.join()
    print("ok" if all(r == ref for r in res) else "MISMATCH", ref[:16])
