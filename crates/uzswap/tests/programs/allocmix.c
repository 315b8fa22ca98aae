/* uzswap test program for other allocators: built plain (glibc), with
 * -DTCMALLOC and -l:libtcmalloc_minimal.so.4, or with -DMIMALLOC and
 * -l:libmimalloc.so.2. It mixes the standard calls on small and large
 * blocks (realloc across the 128K threshold both ways, the aligned calls,
 * malloc_usable_size), pages MIB MiB of large blocks, then asks the linked
 * allocator whether 1000 fresh 100-byte blocks are its own and prints
 * "allocmix: owned N of 1000" (glibc: "allocmix: owned -"), then
 * "allocmix: ok" or the first difference (exit 1). Usage: allocmix MIB */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TCMALLOC
int MallocExtension_GetOwnership(const void *p); /* 1: kOwned */
static int owned(const void *p) { return MallocExtension_GetOwnership(p) == 1; }
#elif defined(MIMALLOC)
#include <stdbool.h>
bool mi_is_in_heap_region(const void *p);
static int owned(const void *p) { return mi_is_in_heap_region(p); }
#endif

#define PROG "allocmix"
#include "blockcheck.h"

int main(int argc, char **argv) {
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
    size_t sizes[] = {24, 100, 5000, 100 << 10, 200 << 10, 3 << 20};
    for (int k = 0; k < 6; k++) {
        size_t n = sizes[k];
        unsigned char *a = malloc(n);
        CHECK(a && malloc_usable_size(a) >= n, "malloc %zu", n);
        fill(a, n, k);
        /* Across the threshold and back. */
        a = realloc(a, n * 4);
        CHECK(a && same(a, n, k) && malloc_usable_size(a) >= n * 4, "realloc up %zu", n);
        a = realloc(a, n / 2 + 1);
        CHECK(a && same(a, n / 2 + 1, k), "realloc down %zu", n);
        free(a);
        unsigned char *c = calloc(n, 1);
        CHECK(c && zero(c, n), "calloc %zu", n);
        free(c);
        void *m = NULL;
        CHECK(posix_memalign(&m, 4096, n) == 0 && ((uintptr_t)m & 4095) == 0, "posix_memalign %zu", n);
        fill(m, n, k + 1);
        m = realloc(m, n + 7000);
        CHECK(m && same(m, n, k + 1), "realloc of aligned %zu", n);
        free(m);
        unsigned char *al = aligned_alloc(64, (n + 63) & ~(size_t)63);
        CHECK(al && ((uintptr_t)al & 63) == 0, "aligned_alloc %zu", n);
        free(al);
        unsigned char *me = memalign(256, n);
        CHECK(me && ((uintptr_t)me & 255) == 0 && malloc_usable_size(me) >= n, "memalign %zu", n);
        free(me);
    }
    /* Many large blocks, far past the limit. */
    size_t nb = mib * 4;
    unsigned char **blk = malloc(nb * sizeof *blk);
    for (size_t i = 0; i < nb; i++) {
        blk[i] = malloc(256 << 10);
        if (!blk[i]) { printf("allocmix: malloc %zu\n", i); return 1; }
        fill(blk[i], 256 << 10, (unsigned)i);
    }
    for (size_t i = 0; i < nb; i++) {
        CHECK(same(blk[i], 256 << 10, (unsigned)i), "block %zu", i);
        free(blk[i]);
    }
    free(blk);
    /* Small blocks: the linked allocator's, unless uzswap's small-object
     * heap is on. */
    void *small[1000];
    int mine = 0;
    for (int i = 0; i < 1000; i++) {
        small[i] = malloc(100);
        CHECK(small[i] && malloc_usable_size(small[i]) >= 100, "small %d", i);
        memset(small[i], i, 100);
    }
#if defined(TCMALLOC) || defined(MIMALLOC)
    for (int i = 0; i < 1000; i++) mine += owned(small[i]);
    printf("allocmix: owned %d of 1000\n", mine);
#else
    (void)mine;
    printf("allocmix: owned -\n");
#endif
    for (int i = 0; i < 1000; i++) free(small[i]);
    if (!fails) printf("allocmix: ok\n");
    return fails != 0;
}
