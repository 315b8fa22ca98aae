/* What the allocator test programs (jemcheck.c, allocmix.c) share: a
 * failure counter and CHECK, which prints PROG ": " and the message, and
 * the byte pattern of a block (fill, same) and zero. Define PROG first. */
#include <stdio.h>
#include <stddef.h>

static int fails;
#define CHECK(c, ...) do { if (!(c)) { printf(PROG ": " __VA_ARGS__); printf("\n"); fails++; } } while (0)

static void fill(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(seed + i * 13);
}
static int same(const unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(seed + i * 13)) return 0;
    return 1;
}
static int zero(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}
