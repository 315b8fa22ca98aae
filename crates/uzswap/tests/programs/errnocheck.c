/* errnocheck: a page fault leaves errno as it was. THREADS threads each
 * fill MIB MiB, then read and write random pages of it many times, each
 * access between setting errno to a sentinel and checking it. Under a
 * limit far below the memory, most accesses fault; a fault served by a
 * signal handler that does not put errno back shows as a changed errno
 * (sort once took such an EAGAIN for a failed strcoll). Each access also
 * bumps a counter byte of its page and checks the one it wrote last: a
 * lost write shows. With THREADS 1 the main thread does the work: the
 * process has one thread.
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
    unsigned char *last = calloc(bytes / 4096, 1);
    if (!p || !last)
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
        unsigned char count = p[page * 4096 + 9];
        p[page * 4096 + 9] = (unsigned char)(count + 1);
        if (errno != sentinel) {
            printf("errnocheck: thread %lu access %ld: errno %d, want %d\n", (unsigned long)id, i,
                   errno, sentinel);
            return (void *)1;
        }
        if (v != (unsigned char)(page + id)) {
            printf("errnocheck: thread %lu page %zu holds %u\n", (unsigned long)id, page, v);
            return (void *)1;
        }
        /* The fill set byte 9 to the page's value; each access adds one. */
        unsigned char want = (unsigned char)(page + id + last[page]);
        if (count != want) {
            printf("errnocheck: thread %lu page %zu count %u, want %u (a lost write)\n",
                   (unsigned long)id, page, count, want);
            return (void *)1;
        }
        last[page]++;
    }
    free(last);
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
    if (threads == 1) {
        if (worker(0) != NULL)
            return 1;
        printf("errnocheck: ok\n");
        return 0;
    }
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
