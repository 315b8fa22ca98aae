# uzswap compat `python-mp-fork`: a parent's bytearray read by 4
# multiprocessing workers started with the fork method; each worker writes
# the checksum of the whole array (salted with its number) to a file, and
# the parent prints them in order. Usage: python_mp_fork.py BYTES
import hashlib
import multiprocessing as mp
import sys

WORKERS = 4
DATA = bytearray()


def fill(n):
    chunk = 1 << 20
    base = bytes((i * 7 + 3) % 251 for i in range(chunk))
    data = bytearray(n)
    for off in range(0, n, chunk):
        end = min(off + chunk, n)
        data[off:end] = base[: end - off]
        data[off : min(off + 8, end)] = off.to_bytes(8, "little")[: min(8, end - off)]
    return data


def work(i):
    h = hashlib.sha256(bytes([i]))
    h.update(memoryview(DATA))
    with open(f"worker-{i}.txt", "w") as f:
        f.write(h.hexdigest())


if __name__ == "__main__":
    mp.set_start_method("fork")
    DATA = fill(int(sys.argv[1]))
    procs = [mp.Process(target=work, args=(i,)) for i in range(WORKERS)]
    for p in procs:
        p.start()
    failed = False
    for i, p in enumerate(procs):
        p.join()
        if p.exitcode != 0:
            how = f"killed by signal {-p.exitcode}" if p.exitcode < 0 else f"exit {p.exitcode}"
            print(f"worker {i} {how}", file=sys.stderr)
            failed = True
    if failed:
        sys.exit(1)
    print(len(DATA), hashlib.sha256(DATA).hexdigest())
    for i in range(WORKERS):
        with open(f"worker-{i}.txt") as f:
            print(f"worker {i}: {f.read()}")
