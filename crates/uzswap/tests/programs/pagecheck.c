/* A C program for `uzswap run` tests: it uses every allocation path the
 * LD_PRELOAD library serves, with a footprint far above the limit, and
 * checks every byte it wrote. Exit 0 when all is well; a message and exit 1
 * on the first wrong byte. Usage: pagecheck [MiB per thread] [threads] */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static size_t mib = 24;
static int nthreads = 4;

static uint64_t word(uint64_t seed, size_t i) {
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + i;
    x ^= x >> 29;
    /* Compressible but not trivial: the top bytes repeat. */
    return (x & 0xffff) | ((seed & 0xff) << 56);
}

static void fill(uint64_t *p, size_t words, uint64_t seed) {
    for (size_t i = 0; i < words; i++) p[i] = word(seed, i);
}

static void check(const uint64_t *p, size_t words, uint64_t seed, const char *what) {
    for (size_t i = 0; i < words; i++) {
        if (p[i] != word(seed, i)) {
            fprintf(stderr, "pagecheck: %s: word %zu is %#llx, wrote %#llx\n", what, i,
                    (unsigned long long)p[i], (unsigned long long)word(seed, i));
            exit(1);
        }
    }
}

static void check_zero(const unsigned char *p, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++) {
        if (p[i]) {
            fprintf(stderr, "pagecheck: %s: byte %zu is %d, expected 0\n", what, i, p[i]);
            exit(1);
        }
    }
}

/* Each thread writes its own buffers in rounds, rewriting half of them each
 * round, while the runtime evicts: writes race evictions. */
static void *writer(void *arg) {
    uintptr_t t = (uintptr_t)arg;
    size_t nbuf = mib / 4, words = (4 << 20) / 8;
    uint64_t **bufs = malloc(nbuf * sizeof *bufs);
    uint64_t *seeds = calloc(nbuf, sizeof *seeds);
    for (size_t b = 0; b < nbuf; b++) {
        bufs[b] = malloc(4 << 20);
        seeds[b] = t * 1000 + b;
        fill(bufs[b], words, seeds[b]);
    }
    for (int round = 1; round <= 3; round++) {
        for (size_t b = 0; b < nbuf; b++) {
            check(bufs[b], words, seeds[b], "thread buffer");
            if ((b + round) % 2 == 0) {
                seeds[b] += 100000;
                fill(bufs[b], words, seeds[b]);
            }
        }
    }
    for (size_t b = 0; b < nbuf; b++) {
        check(bufs[b], words, seeds[b], "thread buffer, last pass");
        free(bufs[b]);
    }
    free(bufs);
    free(seeds);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) mib = strtoul(argv[1], NULL, 10);
    if (argc > 2) nthreads = atoi(argv[2]);

    /* calloc: zeros, even after the pages were evicted. */
    size_t cbytes = 8 << 20;
    unsigned char *c = calloc(1, cbytes);
    check_zero(c, cbytes, "calloc");

    /* realloc: a small glibc block grown past the threshold, then a region
     * grown again: the contents follow. */
    uint64_t *r = malloc(4096);
    fill(r, 512, 7);
    r = realloc(r, 1 << 20);
    check(r, 512, 7, "realloc from glibc");
    fill(r, (1 << 20) / 8, 8);
    r = realloc(r, 6 << 20);
    check(r, (1 << 20) / 8, 8, "realloc region to region");

    /* Aligned allocations. */
    void *al = NULL;
    if (posix_memalign(&al, 2 << 20, 3 << 20) != 0 || ((uintptr_t)al & ((2 << 20) - 1))) {
        fprintf(stderr, "pagecheck: posix_memalign alignment\n");
        return 1;
    }
    fill(al, (3 << 20) / 8, 9);
    uint64_t *aa = aligned_alloc(1 << 16, 1 << 20);
    if ((uintptr_t)aa & 0xffff) {
        fprintf(stderr, "pagecheck: aligned_alloc alignment\n");
        return 1;
    }
    fill(aa, (1 << 20) / 8, 10);

    /* An anonymous mapping: write, discard part, unmap part. */
    size_t mbytes = 16 << 20, mwords = mbytes / 8;
    uint64_t *m = mmap(NULL, mbytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) { perror("mmap"); return 1; }
    fill(m, mwords, 11);

    pthread_t th[64];
    for (int t = 0; t < nthreads && t < 64; t++) pthread_create(&th[t], NULL, writer, (void *)(uintptr_t)t);

    /* A child forked while the writer threads race evictions sees the
     * regions as they were, and pages memory of its own. */
    pid_t pid = fork();
    if (pid == 0) {
        char *small = malloc(100);
        strcpy(small, "child");
        check(m, mwords, 11, "mapping, in the forked child");
        check(aa, (1 << 20) / 8, 10, "aligned_alloc, in the forked child");
        check_zero(c, cbytes, "calloc, in the forked child");
        fill(m, mwords, 12); /* the parent must not see this */
        uint64_t *own = malloc(8 << 20);
        fill(own, (8 << 20) / 8, 13);
        check(own, (8 << 20) / 8, 13, "the forked child's own allocation");
        check(m, mwords, 12, "mapping rewritten in the forked child");
        _exit(strcmp(small, "child") != 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "pagecheck: forked child failed\n");
        return 1;
    }

    for (int t = 0; t < nthreads && t < 64; t++) pthread_join(th[t], NULL);

    check(m, mwords, 11, "mapping");
    /* MADV_DONTNEED on private anonymous memory: those pages read zero. */
    if (madvise((char *)m + (4 << 20), 1 << 20, MADV_DONTNEED) != 0) { perror("madvise"); return 1; }
    check(m, (4 << 20) / 8, 11, "mapping before the discarded part");
    check_zero((unsigned char *)m + (4 << 20), 1 << 20, "discarded part");
    for (size_t i = (5 << 20) / 8; i < mwords; i++)
        if (m[i] != word(11, i)) { fprintf(stderr, "pagecheck: mapping after the discarded part: word %zu\n", i); return 1; }
    if (munmap((char *)m + (8 << 20), 8 << 20) != 0) { perror("munmap tail"); return 1; }
    if (mprotect(m, 8 << 20, PROT_READ) != 0) { perror("mprotect"); return 1; }
    check(m, (4 << 20) / 8, 11, "read-only mapping");
    munmap(m, 8 << 20);

    check_zero(c, cbytes, "calloc, at the end");
    check(r, (1 << 20) / 8, 8, "realloc'd region, at the end");
    check(al, (3 << 20) / 8, 9, "posix_memalign");
    check(aa, (1 << 20) / 8, 10, "aligned_alloc");
    free(c);
    free(r);
    free(al);
    free(aa);
    printf("pagecheck: ok\n");
    return 0;
}
