/* errnocheck: a page fault leaves errno as it was. THREADS threads each
 * fill MIB MiB, then read and write random pages of it many times, each
 * access between setting errno to a sentinel and checking it. Under a
 * limit far below the memory, most accesses fault; a fault served by a
 * signal handler that does not put errno back shows as a changed errno
 * (sort once took such an EAGAIN for a failed strcoll).
 * Usage: errnocheck MIB THREADS ACCESSES */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t bytes;
static long accesses;

static void *worker(void *arg)
{
    uintptr_t id = (uintptr_t)arg;
    unsigned char *p = malloc(bytes);
    if (!p)
        return (void *)1;
    for (size_t i = 0; i < bytes; i += 4096)
        memset(p + i, (int)(i / 4096 + id), 4096);
    uint64_t x = 0x9E3779B97F4A7C15ull * (id + 1);
    for (long i = 0; i < accesses; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t page = (size_t)(x % (bytes / 4096));
        int sentinel = 1000 + (int)(i % 1000);
        errno = sentinel;
        unsigned char v = p[page * 4096 + 17];
        p[page * 4096 + 9] = v;
        if (errno != sentinel) {
            printf("errnocheck: thread %lu access %ld: errno %d, want %d\n", (unsigned long)id, i,
                   errno, sentinel);
            return (void *)1;
        }
        if (v != (unsigned char)(page + id)) {
            printf("errnocheck: thread %lu page %zu holds %u\n", (unsigned long)id, page, v);
            return (void *)1;
        }
    }
    free(p);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: errnocheck MIB THREADS ACCESSES\n");
        return 2;
    }
    bytes = strtoull(argv[1], NULL, 10) << 20;
    int threads = atoi(argv[2]);
    accesses = atol(argv[3]);
    pthread_t t[64];
    if (threads < 1 || threads > 64)
        return 2;
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i);
    int bad = 0;
    for (int i = 0; i < threads; i++) {
        void *r;
        pthread_join(t[i], &r);
        bad |= r != NULL;
    }
    if (bad)
        return 1;
    printf("errnocheck: ok\n");
    return 0;
}
