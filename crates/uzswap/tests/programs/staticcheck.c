/* Built with -static: what a program paged from outside does to its
 * memory. Fills MIB MiB (malloc: mmap'd by glibc), then, all checked
 * against the pattern:
 *   - THREADS threads rewrite and check their quarters, several passes,
 *     taking SIGUSR1 meanwhile (odd threads on an alternate signal stack
 *     in malloc'd memory, even ones on their own stacks) until each has
 *     handled 20;
 *   - write(2) of the buffer to a pipe read(2) back into a second buffer
 *     (the kernel reads and writes evicted pages);
 *   - a forked child checks the whole buffer while the parent rewrites it;
 *   - mremap grows the buffer (moving it), madvise(MADV_DONTNEED) zeroes a
 *     part, munmap drops a part.
 * Prints one line per step and "ok" at the end; exits 1 on a mismatch.
 * Usage: staticcheck [MIB] [THREADS] */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t *buf;
static size_t words;
static int threads;
#define SIGNALS 20
static volatile sig_atomic_t got[64];
static __thread int me;

static void on_usr1(int sig) {
    (void)sig;
    volatile char frame[2048]; /* a handler that uses its stack */
    frame[0] = 1;
    frame[sizeof frame - 1] = frame[0];
    got[me]++;
}

static void pause_a_little(void) {
    struct timespec ts = {0, 200000};
    nanosleep(&ts, 0);
}

static uint64_t pattern(size_t i, uint64_t pass) { return (i * 0x9E3779B97F4A7C15ull) ^ (pass << 56) ^ (i >> 9); }

static int check(const uint64_t *p, size_t from, size_t to, uint64_t pass, const char *what) {
    for (size_t i = from; i < to; i++)
        if (p[i] != pattern(i, pass)) {
            printf("%s: MISMATCH at word %zu: %llx, wanted %llx\n", what, i, (unsigned long long)p[i], (unsigned long long)pattern(i, pass));
            return 1;
        }
    return 0;
}

static void *worker(void *arg) {
    size_t t = (size_t)arg, per = words / threads;
    size_t from = t * per, to = t + 1 == (size_t)threads ? words : from + per;
    me = (int)t;
    if (t % 2) {
        stack_t ss = {.ss_sp = malloc(1 << 16), .ss_size = 1 << 16, .ss_flags = 0};
        if (!ss.ss_sp || sigaltstack(&ss, 0)) return (void *)1;
    }
    for (uint64_t pass = 1; pass <= 3; pass++) {
        if (check(buf, from, to, pass - 1, "thread")) return (void *)1;
        for (size_t i = from; i < to; i++) buf[i] = pattern(i, pass);
    }
    while (got[t] < SIGNALS) pause_a_little();
    return 0;
}

int main(int argc, char **argv) {
    size_t mib = argc > 1 ? strtoul(argv[1], 0, 10) : 64;
    threads = argc > 2 ? atoi(argv[2]) : 4;
    words = mib << 17;
    buf = malloc(words * 8);
    for (size_t i = 0; i < words; i++) buf[i] = pattern(i, 0);
    printf("filled %zu MiB\n", mib);

    if (threads > 64) threads = 64;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sa.sa_flags = SA_ONSTACK | SA_RESTART;
    sigaction(SIGUSR1, &sa, 0);
    pthread_t th[64];
    for (int t = 0; t < threads; t++) pthread_create(&th[t], 0, worker, (void *)(size_t)t);
    for (int all = 0; !all;) {
        all = 1;
        for (int t = 0; t < threads; t++)
            if (got[t] < SIGNALS) {
                all = 0;
                pthread_kill(th[t], SIGUSR1);
            }
        pause_a_little();
    }
    int bad = 0;
    for (int t = 0; t < threads; t++) { void *r; pthread_join(th[t], &r); bad |= r != 0; }
    if (bad || check(buf, 0, words, 3, "after threads")) return 1;
    printf("threads: ok\nsignals: ok\n");

    /* The kernel copies evicted pages out (write) and into others (read). */
    uint64_t *copy = malloc(words * 8);
    memset(copy, 0xAA, words * 8);
    int fds[2];
    if (pipe(fds)) return 1;
    pid_t writer = fork();
    if (writer == 0) {
        close(fds[0]);
        size_t off = 0, len = words * 8;
        while (off < len) { ssize_t n = write(fds[1], (char *)buf + off, len - off > 65536 ? 65536 : len - off); if (n <= 0) _exit(2); off += n; }
        _exit(0);
    }
    close(fds[1]);
    size_t off = 0, len = words * 8;
    while (off < len) { ssize_t n = read(fds[0], (char *)copy + off, len - off); if (n <= 0) break; off += n; }
    int st;
    waitpid(writer, &st, 0);
    if (off != len || !WIFEXITED(st) || WEXITSTATUS(st) || check(copy, 0, words, 3, "pipe copy")) { printf("pipe: FAILED\n"); return 1; }
    free(copy);
    printf("syscalls: ok\n");

    /* A forked child sees the fork-time bytes; the parent its own. */
    pid_t kid = fork();
    if (kid == 0) _exit(check(buf, 0, words, 3, "child"));
    for (size_t i = 0; i < words; i++) buf[i] = pattern(i, 4);
    waitpid(kid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) || check(buf, 0, words, 4, "parent after fork")) { printf("fork: FAILED\n"); return 1; }
    printf("fork: ok\n");

    /* mremap (moves the pages and their stored copies), madvise, munmap. */
    size_t bytes = (words * 8 + 4095) & ~4095ul;
    uint64_t *m = mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (size_t i = 0; i < bytes / 8; i++) m[i] = pattern(i, 5);
    usleep(300000); /* time for the pager to find the mapping and evict */
    uint64_t *g = mremap(m, bytes, bytes * 2, MREMAP_MAYMOVE);
    if (g == MAP_FAILED || check(g, 0, bytes / 8, 5, "mremap")) { printf("mremap: FAILED\n"); return 1; }
    for (size_t i = 0; i < bytes / 8; i++) if (g[bytes / 8 + i]) { printf("mremap: new part not zero\n"); return 1; }
    madvise(g, bytes / 2, MADV_DONTNEED);
    for (size_t i = 0; i < bytes / 16; i++) if (g[i]) { printf("madvise: not zero at %zu\n", i); return 1; }
    if (check(g, bytes / 16, bytes / 8, 5, "after madvise")) return 1;
    munmap(g, bytes);
    printf("mappings: ok\n");

    uint64_t sum = 0;
    for (size_t i = 0; i < words; i++) sum = sum * 31 + buf[i];
    printf("sum %llx\nok\n", (unsigned long long)sum);
    return 0;
}
