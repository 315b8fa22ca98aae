/* Forks FORKS times from a process whose THREADS threads keep writing and
 * reading their buffers (far more than the limit: evictions are in flight
 * at every fork). Each child checks a sample of every thread's buffer as it
 * was at the fork, and exits. Must never hang. Usage: forkstorm FORKS THREADS MIB */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static size_t words;
static uint64_t *bufs[16];
static _Atomic uint64_t gens[16];
static atomic_int stop;

static void *writer(void *arg) {
    int t = (int)(uintptr_t)arg;
    uint64_t g = 0;
    while (!atomic_load(&stop)) {
        g++;
        /* A whole buffer of generation g; words carry (g << 32 | index). */
        for (size_t i = 0; i < words; i += 512) bufs[t][i] = (g << 32) | i;
        atomic_store(&gens[t], g);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int forks = argc > 1 ? atoi(argv[1]) : 200;
    int nthreads = argc > 2 ? atoi(argv[2]) : 4;
    size_t mib = argc > 3 ? strtoul(argv[3], NULL, 10) : 8;
    if (nthreads > 16) nthreads = 16;
    words = mib << 17;
    for (int t = 0; t < nthreads; t++) {
        bufs[t] = malloc(words * 8);
        for (size_t i = 0; i < words; i += 512) bufs[t][i] = i;
    }
    pthread_t th[16];
    for (int t = 0; t < nthreads; t++) pthread_create(&th[t], NULL, writer, (void *)(uintptr_t)t);
    int bad = 0;
    for (int f = 0; f < forks && !bad; f++) {
        pid_t pid = fork();
        if (pid < 0) { perror("fork"); return 1; }
        if (pid == 0) {
            /* Frozen at the fork: each word is (g << 32 | i) for some g, and
             * generations only decrease along the buffer (the writer was
             * somewhere in its pass). */
            for (int t = 0; t < nthreads; t++) {
                uint64_t prev = UINT64_MAX;
                for (size_t i = 0; i < words; i += 512) {
                    uint64_t w = bufs[t][i], g = w >> 32;
                    if ((w & 0xffffffff) != i || g > prev) {
                        fprintf(stderr, "fork %d thread %d word %zu: %#llx\n", f, t, i, (unsigned long long)w);
                        _exit(1);
                    }
                    prev = g;
                }
            }
            _exit(0);
        }
        int st;
        if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) bad = 1;
    }
    atomic_store(&stop, 1);
    for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
    printf("forkstorm: %s\n", bad ? "FAILED" : "ok");
    return bad;
}
