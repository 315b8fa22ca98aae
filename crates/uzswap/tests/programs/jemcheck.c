/* uzswap test program, linked with jemalloc (-l:libjemalloc.so.2): the
 * standard calls and jemalloc's extended API (mallocx, rallocx, xallocx,
 * sallocx, dallocx, sdallocx, nallocx) on small and large blocks, mixed
 * (a malloc block freed with sdallocx, a mallocx block freed with free),
 * then MIB MiB of large mallocx blocks written, read back and freed, then
 * 1000 small mallocs: how many of their bytes jemalloc counted
 * ("thread.allocated") is printed as "jemcheck: small bytes N".
 * Prints "jemcheck: ok" or the first difference (exit 1).
 * Usage: jemcheck MIB */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* jemalloc's extended API (no header needed: libjemalloc-dev is not). */
void *mallocx(size_t size, int flags);
void *rallocx(void *ptr, size_t size, int flags);
size_t xallocx(void *ptr, size_t size, size_t extra, int flags);
size_t sallocx(const void *ptr, int flags);
void dallocx(void *ptr, int flags);
void sdallocx(void *ptr, size_t size, int flags);
size_t nallocx(size_t size, int flags);
size_t malloc_usable_size(void *ptr);
int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
#define MALLOCX_LG_ALIGN(la) ((int)(la))
#define MALLOCX_ZERO ((int)0x40)

#define PROG "jemcheck"
#include "blockcheck.h"

int main(int argc, char **argv) {
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
    size_t sizes[] = {100, 5000, 200 << 10, 3 << 20};
    for (int k = 0; k < 4; k++) {
        size_t n = sizes[k];
        /* malloc, then jemalloc's calls on it. */
        unsigned char *a = malloc(n);
        CHECK(a && malloc_usable_size(a) >= n && sallocx(a, 0) >= n, "malloc %zu", n);
        fill(a, n, k);
        CHECK(xallocx(a, n, 0, 0) >= n, "xallocx %zu", n);
        a = rallocx(a, 2 * n, MALLOCX_ZERO);
        CHECK(a && same(a, n, k) && zero(a + n, n), "rallocx zero %zu", n);
        sdallocx(a, 2 * n, 0);
        /* mallocx, then the standard calls on it. */
        unsigned char *b = mallocx(n, MALLOCX_ZERO);
        CHECK(b && zero(b, n) && malloc_usable_size(b) >= n, "mallocx zero %zu", n);
        fill(b, n, k + 1);
        b = realloc(b, 3 * n);
        CHECK(b && same(b, n, k + 1), "realloc of mallocx %zu", n);
        free(b);
        /* Aligned. */
        unsigned char *c = mallocx(n, MALLOCX_LG_ALIGN(12));
        CHECK(c && ((uintptr_t)c & 4095) == 0, "mallocx aligned %zu", n);
        fill(c, n, k + 2);
        c = rallocx(c, n + 4096, MALLOCX_LG_ALIGN(12));
        CHECK(c && ((uintptr_t)c & 4095) == 0 && same(c, n, k + 2), "rallocx aligned %zu", n);
        dallocx(c, 0);
        CHECK(nallocx(n, 0) >= n, "nallocx %zu", n);
    }
    /* Many large blocks, far past the limit. */
    size_t nb = mib * 4;
    unsigned char **blk = malloc(nb * sizeof *blk);
    for (size_t i = 0; i < nb; i++) {
        blk[i] = mallocx(256 << 10, 0);
        if (!blk[i]) { printf("jemcheck: mallocx %zu\n", i); return 1; }
        fill(blk[i], 256 << 10, (unsigned)i);
    }
    for (size_t i = 0; i < nb; i++) {
        CHECK(same(blk[i], 256 << 10, (unsigned)i), "block %zu", i);
        if (i % 2) sdallocx(blk[i], 256 << 10, 0); else dallocx(blk[i], 0);
    }
    free(blk);
    /* Small blocks: jemalloc's, unless uzswap's small-object heap is on. */
    uint64_t before = 0, after = 0;
    size_t len = sizeof before;
    CHECK(mallctl("thread.allocated", &before, &len, NULL, 0) == 0, "mallctl");
    void *small[1000];
    for (int i = 0; i < 1000; i++) small[i] = malloc(100);
    mallctl("thread.allocated", &after, &len, NULL, 0);
    for (int i = 0; i < 1000; i++) {
        CHECK(small[i] && malloc_usable_size(small[i]) >= 100, "small %d", i);
        free(small[i]);
    }
    printf("jemcheck: small bytes %llu\n", (unsigned long long)(after - before));
    if (!fails) printf("jemcheck: ok\n");
    return fails != 0;
}
