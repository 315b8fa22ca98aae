/* Issue 10's stale-address reproduction, as a program: mmap 7 MiB and touch
 * it, munmap it, mmap 1 MiB blocks until one lands at the same address, then
 * write and read back 64 MiB of 1 MiB blocks (the reused one among them).
 * Run under a 16M limit, the old region's LRU records must not meet the new
 * one. Exit 0 and "stalecheck: ok" when every byte reads back; a message and
 * exit 1 otherwise. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MIB (1UL << 20)

static void *map(size_t n) {
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("stalecheck: mmap");
        exit(1);
    }
    return p;
}

static uint64_t word(uint64_t block, size_t i) {
    uint64_t x = (block + 1) * 0x9E3779B97F4A7C15ull + i;
    return (x ^ (x >> 31)) & 0x0000ffff0000ffffull; /* compressible */
}

int main(void) {
    size_t big_len = 7 * MIB;
    unsigned char *big = map(big_len);
    memset(big, 1, big_len);
    munmap(big, big_len);

    enum { TRIES = 64, BLOCKS = 64 };
    uint64_t *tries[TRIES];
    uint64_t *same = NULL;
    int n_tries = 0;
    while (n_tries < TRIES) {
        uint64_t *p = map(MIB);
        if ((unsigned char *)p == big) {
            same = p;
            break;
        }
        tries[n_tries++] = p;
    }
    if (!same) {
        fprintf(stderr, "stalecheck: no 1 MiB block landed at %p in %d tries\n", big, TRIES);
        return 1;
    }
    uint64_t *blocks[BLOCKS + 1];
    blocks[0] = same;
    for (int b = 1; b <= BLOCKS; b++) blocks[b] = map(MIB);
    size_t words = MIB / 8;
    for (int round = 0; round < 2; round++) {
        for (int b = 0; b <= BLOCKS; b++)
            for (size_t i = 0; i < words; i++) blocks[b][i] = word(b * 2 + round, i);
        for (int b = 0; b <= BLOCKS; b++)
            for (size_t i = 0; i < words; i++)
                if (blocks[b][i] != word(b * 2 + round, i)) {
                    fprintf(stderr, "stalecheck: round %d block %d word %zu is %#llx, wrote %#llx\n",
                            round, b, i, (unsigned long long)blocks[b][i],
                            (unsigned long long)word(b * 2 + round, i));
                    return 1;
                }
    }
    for (int t = 0; t < n_tries; t++) munmap(tries[t], MIB);
    printf("stalecheck: ok (a 1 MiB block reused %p after %d others)\n", big, n_tries);
    return 0;
}
