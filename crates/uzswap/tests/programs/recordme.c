/* A program whose paging `uzswap run --record` records: 32 MiB written,
 * 200k random reads and writes over it, then a forked child that reads a
 * quarter of it and fills 8 MiB of its own. Prints a checksum of
 * everything, so that a recorded run can be compared with a plain one. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1024 * 1024)

static uint64_t next(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 17;
}

static uint64_t sum(const uint64_t *p, size_t n) {
    uint64_t h = 0;
    for (size_t i = 0; i < n; i++)
        h = h * 31 + p[i];
    return h;
}

int main(void) {
    size_t n = 32 * MIB / 8;
    uint64_t *a = malloc(n * 8);
    if (!a)
        return 1;
    for (size_t i = 0; i < n; i++)
        a[i] = i * 2654435761u;
    uint64_t s = 42;
    for (int k = 0; k < 200000; k++) {
        size_t i = next(&s) % n;
        if (k % 3 == 0)
            a[i] += k;
        else
            s ^= a[i] & 1;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        size_t m = 8 * MIB / 8;
        uint64_t *b = malloc(m * 8);
        if (!b)
            _exit(1);
        for (size_t i = 0; i < m; i++)
            b[i] = a[i % (n / 4)] ^ i;
        printf("child %016llx\n", (unsigned long long)sum(b, m));
        fflush(stdout);
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    printf("parent %016llx %d\n", (unsigned long long)sum(a, n), WEXITSTATUS(status));
    return 0;
}
