/* uzswap compat `usemem`: vm-scalability's usemem in miniature. Forks
 * WORKERS processes; each maps BYTES of private anonymous memory, writes
 * every 8-byte word with a value of its own, reads everything back and
 * checks it, and sends its checksum to the parent, which prints them in
 * order and "ok". Usage: usemem WORKERS BYTES */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t word(unsigned worker, uint64_t i)
{
    uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ ((uint64_t)worker << 56);
    /* Half the words small: realistic, compressible memory. */
    return (i & 1) ? (x >> 48) : x;
}

static int work(unsigned worker, size_t bytes, int out)
{
    size_t words = bytes / sizeof(uint64_t);
    uint64_t *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "worker %u: mmap: %s\n", worker, strerror(errno));
        return 1;
    }
    for (size_t i = 0; i < words; i++)
        p[i] = word(worker, i);
    uint64_t sum = 0;
    for (size_t i = 0; i < words; i++) {
        if (p[i] != word(worker, i)) {
            fprintf(stderr, "worker %u: word %zu is %llx, wrote %llx\n", worker, i,
                    (unsigned long long)p[i], (unsigned long long)word(worker, i));
            return 1;
        }
        sum = sum * 31 + p[i];
    }
    if (write(out, &sum, sizeof sum) != (ssize_t)sizeof sum) {
        fprintf(stderr, "worker %u: write: %s\n", worker, strerror(errno));
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: usemem WORKERS BYTES\n");
        return 2;
    }
    unsigned workers = (unsigned)strtoul(argv[1], NULL, 10);
    size_t bytes = (size_t)strtoull(argv[2], NULL, 10);
    int pipes[64][2];
    pid_t pids[64];
    if (workers == 0 || workers > 64 || bytes < sizeof(uint64_t)) {
        fprintf(stderr, "usemem: 1 to 64 workers of at least 8 bytes\n");
        return 2;
    }
    for (unsigned w = 0; w < workers; w++) {
        if (pipe(pipes[w]) != 0) {
            perror("pipe");
            return 1;
        }
        pids[w] = fork();
        if (pids[w] < 0) {
            perror("fork");
            return 1;
        }
        if (pids[w] == 0) {
            close(pipes[w][0]);
            _exit(work(w, bytes, pipes[w][1]));
        }
        close(pipes[w][1]);
    }
    int failed = 0;
    for (unsigned w = 0; w < workers; w++) {
        uint64_t sum = 0;
        ssize_t got = read(pipes[w][0], &sum, sizeof sum);
        int status = 0;
        waitpid(pids[w], &status, 0);
        if (WIFSIGNALED(status)) {
            fprintf(stderr, "worker %u killed by signal %d\n", w, WTERMSIG(status));
            failed = 1;
        } else if (WEXITSTATUS(status) != 0 || got != (ssize_t)sizeof sum) {
            fprintf(stderr, "worker %u failed (exit %d)\n", w, WEXITSTATUS(status));
            failed = 1;
        } else {
            printf("worker %u: %016llx\n", w, (unsigned long long)sum);
        }
    }
    if (failed)
        return 1;
    printf("ok\n");
    return 0;
}
