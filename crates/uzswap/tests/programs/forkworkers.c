/* vm-scalability usemem's shape: a parent forks N workers; each allocates
 * after the fork, writes, and verifies over R repeats (usemem's -r check),
 * with a fresh pattern each repeat. Exit 0 when every worker is right.
 * Usage: forkworkers N MIB R */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t word(uint64_t seed, size_t i) {
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + i;
    x ^= x >> 31;
    return (x & 0xfffff) | (seed << 40);
}

static int worker(int k, size_t mib, int repeats) {
    size_t n = mib << 17;
    uint64_t *p = malloc(n * 8);
    if (!p) return 2;
    for (int r = 0; r < repeats; r++) {
        uint64_t seed = (uint64_t)k * 1000 + r;
        for (size_t i = 0; i < n; i++) p[i] = word(seed, i);
        for (size_t i = 0; i < n; i++)
            if (p[i] != word(seed, i)) {
                fprintf(stderr, "worker %d repeat %d: word %zu wrong\n", k, r, i);
                return 1;
            }
    }
    free(p);
    return 0;
}

int main(int argc, char **argv) {
    int nworkers = argc > 1 ? atoi(argv[1]) : 2;
    size_t mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 32;
    int repeats = argc > 3 ? atoi(argv[3]) : 2;
    pid_t pids[64];
    for (int k = 0; k < nworkers && k < 64; k++) {
        pids[k] = fork();
        if (pids[k] < 0) { perror("fork"); return 1; }
        if (pids[k] == 0) _exit(worker(k, mib, repeats));
    }
    int bad = 0;
    for (int k = 0; k < nworkers && k < 64; k++) {
        int st;
        if (waitpid(pids[k], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "worker %d failed (status %d)\n", k, st);
            bad = 1;
        }
    }
    printf("forkworkers: %s\n", bad ? "FAILED" : "ok");
    return bad;
}
