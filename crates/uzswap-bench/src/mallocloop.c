/* What `uzswap bench malloc` runs: holds HELD_MIB of 64-byte blocks (past
 * the small-object heap's threshold, or not), takes one 1 MiB buffer (a
 * region: the runtime starts), then frees and allocates PAIRS blocks of
 * 16 to 215 bytes through a ring of 64, and prints the nanoseconds a
 * free and malloc took, timed around that loop alone. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: mallocloop HELD_MIB PAIRS\n");
        return 2;
    }
    size_t held = (size_t)atol(argv[1]) << 20;
    long pairs = atol(argv[2]);
    size_t n = held / 64;
    char **hold = malloc((n + 1) * sizeof *hold);
    char *big = malloc(1 << 20);
    if (!hold || !big) return 1;
    memset(big, 1, 1 << 20);
    for (size_t i = 0; i < n; i++) {
        hold[i] = malloc(64);
        if (!hold[i]) return 1;
        hold[i][0] = (char)i;
    }
    char *ring[64] = {0};
    unsigned long sum = 0;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long i = 0; i < pairs; i++) {
        int k = i & 63;
        free(ring[k]);
        ring[k] = malloc(16 + (size_t)(i % 200));
        if (!ring[k]) return 1;
        ring[k][0] = (char)i;
        sum += (unsigned char)ring[k][0];
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    for (size_t i = 0; i < n; i++) sum += (unsigned char)hold[i][0];
    double ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (double)pairs;
    printf("ns_per_pair %.2f check %lu\n", ns, sum % 1000);
    return 0;
}
