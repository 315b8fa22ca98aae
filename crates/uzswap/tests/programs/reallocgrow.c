/* Grows one buffer by realloc, doubling from 128 KiB to MIB MiB, writing
 * each new part with a pattern of its offset; then checks every byte.
 * Prints "reallocgrow: ok" and how many times the buffer moved. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t word(size_t i) { return (uint64_t)i * 0x9E3779B97F4A7C15ull ^ (i >> 7); }

int main(int argc, char **argv) {
    size_t max = (argc > 1 ? strtoull(argv[1], 0, 10) : 512) << 20;
    size_t size = 128 << 10, filled = 0, moves = 0;
    uint64_t *p = malloc(size);
    if (!p) return 2;
    for (;;) {
        for (size_t i = filled / 8; i < size / 8; i++) p[i] = word(i);
        filled = size;
        if (size >= max) break;
        uint64_t *q = realloc(p, size * 2);
        if (!q) { fprintf(stderr, "realloc failed at %zu\n", size * 2); return 2; }
        moves += q != p;
        p = q;
        size *= 2;
    }
    for (size_t i = 0; i < size / 8; i++)
        if (p[i] != word(i)) { fprintf(stderr, "reallocgrow: word %zu differs\n", i); return 1; }
    printf("reallocgrow: ok (%zu MiB, moved %zu times)\n", size >> 20, moves);
    free(p);
    return 0;
}
