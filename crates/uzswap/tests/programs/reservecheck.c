/* A heap as the JVM and V8 make theirs: one PROT_NONE reservation of
 * 96 MiB, committed by mmap(MAP_FIXED) (the JVM) and by mprotect(RW) in
 * 256 KiB steps (V8), written, read(2) into from a file, then changed as
 * the kernel allows, each with the kernel's meaning checked:
 *   - mmap(MAP_FIXED, PROT_NONE) decommits: committed again, zeros;
 *   - mprotect(PROT_NONE) then mprotect(RW): the bytes are kept;
 *   - madvise(MADV_DONTNEED): zeros;
 *   - munmap of a part: the rest keeps its bytes; the part can be mapped
 *     again (MAP_FIXED_NOREPLACE finds it free).
 * Every byte is checked twice (after the writes and at the end).
 * Prints "reservecheck: ok". Usage: reservecheck DIR (for the file). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MIB (1ul << 20)
#define RESERVED (96 * MIB)
#define FIXED (24 * MIB)     /* [0, 24M): committed by mmap(MAP_FIXED) */
#define PROTECTED (24 * MIB) /* [32M, 56M): by mprotect, 256K at a time */
#define STEP (256 << 10)

static char *base;

static uint64_t word(size_t off, unsigned gen) {
    return ((uint64_t)off * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)gen << 56) ^ (off >> 12);
}

static void fill(size_t from, size_t to, unsigned gen) {
    for (size_t o = from; o < to; o += 8) *(uint64_t *)(base + o) = word(o, gen);
}

static void check(size_t from, size_t to, unsigned gen, const char *what) {
    for (size_t o = from; o < to; o += 8) {
        uint64_t want = gen == 0 ? 0 : word(o, gen);
        if (*(uint64_t *)(base + o) != want) {
            fprintf(stderr, "reservecheck: %s: byte %zu differs\n", what, o);
            exit(1);
        }
    }
}

static void die(const char *what) {
    fprintf(stderr, "reservecheck: %s: %s\n", what, strerror(errno));
    exit(2);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    base = mmap(NULL, RESERVED, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (base == MAP_FAILED) die("reserve");
    /* The JVM's commit. */
    if (mmap(base, FIXED, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != base)
        die("MAP_FIXED commit");
    /* V8's: step by step, each right behind the last. */
    for (size_t o = 32 * MIB; o < 32 * MIB + PROTECTED; o += STEP)
        if (mprotect(base + o, STEP, PROT_READ | PROT_WRITE)) die("mprotect commit");
    check(0, FIXED, 0, "fresh MAP_FIXED commit");
    check(32 * MIB, 32 * MIB + PROTECTED, 0, "fresh mprotect commit");
    fill(0, FIXED, 1);
    fill(32 * MIB, 32 * MIB + PROTECTED, 2);

    /* read(2) into committed memory, most of it swapped out by now. */
    char path[4096];
    snprintf(path, sizeof path, "%s/reservecheck.bin", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) die("open");
    size_t io_at = 40 * MIB, io_len = 4 * MIB;
    if (write(fd, base + 8 * MIB, io_len) != (ssize_t)io_len) die("write from the heap");
    if (pread(fd, base + io_at, io_len, 0) != (ssize_t)io_len) die("read into the heap");
    close(fd);
    unlink(path);
    if (memcmp(base + io_at, base + 8 * MIB, io_len)) {
        fprintf(stderr, "reservecheck: read(2) brought other bytes\n");
        return 1;
    }
    fill(io_at, io_at + io_len, 2); /* back to the pattern */
    check(0, FIXED, 1, "MAP_FIXED commit");
    check(32 * MIB, 32 * MIB + PROTECTED, 2, "mprotect commit");

    /* Decommit [4M, 8M) as the JVM does, then commit it again: zeros. */
    if (mmap(base + 4 * MIB, 4 * MIB, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) != base + 4 * MIB)
        die("decommit");
    if (mmap(base + 4 * MIB, 4 * MIB, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != base + 4 * MIB)
        die("commit again");
    check(4 * MIB, 8 * MIB, 0, "recommitted range");
    fill(4 * MIB, 8 * MIB, 3);

    /* mprotect(PROT_NONE) then back: the kernel keeps the bytes. */
    if (mprotect(base + 44 * MIB, 2 * MIB, PROT_NONE)) die("mprotect none");
    if (mprotect(base + 44 * MIB, 2 * MIB, PROT_READ | PROT_WRITE)) die("mprotect back");
    check(44 * MIB, 46 * MIB, 2, "range protected and back");

    /* MADV_DONTNEED: zeros. */
    if (madvise(base + 48 * MIB, MIB, MADV_DONTNEED)) die("madvise");
    check(48 * MIB, 49 * MIB, 0, "range after MADV_DONTNEED");
    fill(48 * MIB, 49 * MIB, 2);

    /* munmap the middle of the mprotect commit; the room is free again. */
    if (munmap(base + 50 * MIB, 2 * MIB)) die("munmap");
    char *again = mmap(base + 50 * MIB, 2 * MIB, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (again != base + 50 * MIB) die("map the unmapped part again");
    check(50 * MIB, 52 * MIB, 0, "part mapped again");
    fill(50 * MIB, 52 * MIB, 2);

    check(0, 4 * MIB, 1, "MAP_FIXED commit at the end");
    check(4 * MIB, 8 * MIB, 3, "recommitted range at the end");
    check(8 * MIB, FIXED, 1, "MAP_FIXED commit at the end");
    check(32 * MIB, 32 * MIB + PROTECTED, 2, "mprotect commit at the end");
    if (munmap(base, RESERVED)) die("munmap all");
    printf("reservecheck: ok\n");
    return 0;
}
