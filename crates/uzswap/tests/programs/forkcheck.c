/* Parent fills MIB MiB (far more than the limit), forks KIDS children that
 * checksum all of it while the parent rewrites it: each child must see the
 * pre-fork contents, the parent its own. Usage: forkcheck [MIB] [KIDS] */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
static uint64_t sum(const uint64_t *p, size_t n) { uint64_t s = 0; for (size_t i = 0; i < n; i++) s = s * 31 + p[i]; return s; }
int main(int argc, char **argv) {
    size_t mib = argc > 1 ? atoi(argv[1]) : 64, kids = argc > 2 ? atoi(argv[2]) : 2;
    size_t n = mib << 17; // uint64 words
    uint64_t *p = malloc(n * 8);
    for (size_t i = 0; i < n; i++) p[i] = i * 2654435761u ^ (i >> 7);
    uint64_t before = sum(p, n);
    pid_t pids[16];
    for (size_t k = 0; k < kids; k++) {
        pids[k] = fork();
        if (pids[k] == 0) {
            uint64_t s = sum(p, n);
            // The child writes too: invisible to the parent.
            for (size_t i = 0; i < n; i += 512) p[i] = 0xdead;
            printf("child %zu: %s\n", k, s == before ? "ok" : "MISMATCH");
            fflush(stdout);
            _exit(s == before ? 0 : 1);
        }
    }
    for (size_t i = 0; i < n; i++) p[i] = ~p[i];
    int bad = 0;
    for (size_t k = 0; k < kids; k++) { int st; waitpid(pids[k], &st, 0); if (!WIFEXITED(st) || WEXITSTATUS(st)) { bad = 1; printf("child %zu status %d\n", k, st); } }
    for (size_t i = 0; i < n; i++) p[i] = ~p[i];
    uint64_t after = sum(p, n);
    printf("parent: %s\n", (after == before && !bad) ? "ok" : "MISMATCH");
    return after == before && !bad ? 0 : 1;
}
