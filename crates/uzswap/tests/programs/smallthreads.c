/* uzswap test program: THREADS threads each allocate OBJS small objects
 * (malloc/calloc/realloc, 16 B to 2 KB) filled with a pattern of their
 * own; after a barrier each thread checks and frees the objects of the
 * next thread (frees across threads) and allocates them again, and after
 * a second barrier every object is checked once more. Under
 * --small-objects none of this reaches glibc's per-thread arenas: it is
 * paged. Prints "smallthreads: ok" or the first difference (exit 1).
 * Usage: smallthreads [THREADS [OBJS]] */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int threads = 8;
static int objs = 6000;
static unsigned char ***obj;
static size_t **len;
static pthread_barrier_t barrier;
static int failed;

static unsigned char byte_of(int t, int i, size_t j, int round) {
    return (unsigned char)(t * 31 + i * 131 + j * 7 + round * 17 + 1);
}

static void fill(int t, int i, int round) {
    for (size_t j = 0; j < len[t][i]; j++) obj[t][i][j] = byte_of(t, i, j, round);
}

static int check(int t, int i, int round, const char *when) {
    for (size_t j = 0; j < len[t][i]; j++) {
        if (obj[t][i][j] != byte_of(t, i, j, round)) {
            printf("smallthreads: %s: thread %d object %d byte %zu is %u, want %u\n", when, t, i,
                   j, obj[t][i][j], byte_of(t, i, j, round));
            __atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
            return 1;
        }
    }
    return 0;
}

static unsigned char *alloc(int i, size_t n) {
    switch (i % 3) {
    case 0: return malloc(n);
    case 1: return calloc(1, n);
    default: {
        unsigned char *p = malloc(n / 2 + 1);
        return p ? realloc(p, n) : NULL;
    }
    }
}

static void *worker(void *arg) {
    int t = (int)(intptr_t)arg;
    unsigned seed = (unsigned)t * 7919u + 1;
    for (int i = 0; i < objs; i++) {
        len[t][i] = 16 + rand_r(&seed) % 2000;
        obj[t][i] = alloc(i, len[t][i]);
        if (!obj[t][i]) { printf("smallthreads: allocation\n"); exit(1); }
        fill(t, i, 0);
    }
    pthread_barrier_wait(&barrier);
    int u = (t + 1) % threads;
    for (int i = 0; i < objs; i++) {
        if (check(u, i, 0, "before the cross-thread free")) break;
        free(obj[u][i]);
        obj[u][i] = alloc(i, len[u][i]);
        if (!obj[u][i]) { printf("smallthreads: allocation\n"); exit(1); }
        fill(u, i, 1);
    }
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < objs; i++)
        if (check(t, i, 1, "at the end")) break;
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) threads = atoi(argv[1]);
    if (argc > 2) objs = atoi(argv[2]);
    obj = calloc(threads, sizeof *obj);
    len = calloc(threads, sizeof *len);
    for (int t = 0; t < threads; t++) {
        obj[t] = calloc(objs, sizeof **obj);
        len[t] = calloc(objs, sizeof **len);
    }
    pthread_barrier_init(&barrier, NULL, threads);
    pthread_t *tid = calloc(threads, sizeof *tid);
    for (int t = 0; t < threads; t++)
        if (pthread_create(&tid[t], NULL, worker, (void *)(intptr_t)t)) {
            printf("smallthreads: pthread_create\n");
            return 1;
        }
    for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);
    if (!failed) printf("smallthreads: ok\n");
    return failed;
}
