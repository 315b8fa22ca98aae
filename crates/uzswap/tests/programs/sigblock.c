/* The syscall guard and programs that block signals: the main thread blocks
 * every signal before it starts a helper thread (both then block SIGSYS, as
 * many servers' worker threads do), and only then makes its first large
 * allocation, writes it, reads a file into it and checks every byte. Then,
 * with the guard in, a new thread blocks every signal itself (as jemalloc's
 * background threads do) and reads the file into the evicted buffer again.
 * Prints "sigblock: ok" and the Seccomp line of /proc/self/status before
 * and after the first region. Usage: sigblock FILE */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void seccomp_line(const char *when) {
    char buf[4096];
    int fd = open("/proc/self/status", O_RDONLY);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    buf[n > 0 ? n : 0] = 0;
    char *s = strstr(buf, "Seccomp:");
    printf("%s: %.*s\n", when, s ? (int)strcspn(s, "\n") : 0, s ? s : "");
}

static void *helper(void *arg) {
    pause();
    return arg;
}

struct reread {
    int fd;
    unsigned char *p;
    size_t len;
    ssize_t got;
};

/* Blocks every signal, SIGSYS included, then reads into the buffer. */
static void *blocked_reader(void *arg) {
    struct reread *r = arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, NULL);
    r->got = pread(r->fd, r->p, r->len, 0);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    seccomp_line("before");
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    pthread_t t;
    pthread_create(&t, NULL, helper, NULL);
    size_t n = 64 << 20;
    unsigned char *p = malloc(n);
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 7 + (i >> 12));
    int fd = open(argv[1], O_RDONLY);
    size_t len = 4 << 20;
    /* Into a buffer whose pages were evicted: the guard must serve it. */
    ssize_t r = read(fd, p, len);
    if (r != (ssize_t)len) {
        perror("sigblock: read");
        return 1;
    }
    for (size_t i = 0; i < len; i++)
        if (p[i] != (unsigned char)(i * 13)) {
            fprintf(stderr, "sigblock: file byte %zu is %d\n", i, p[i]);
            return 1;
        }
    for (size_t i = len; i < n; i++)
        if (p[i] != (unsigned char)(i * 7 + (i >> 12))) {
            fprintf(stderr, "sigblock: byte %zu is %d\n", i, p[i]);
            return 1;
        }
    seccomp_line("after");
    /* Evict the file's bytes again (the rest of the buffer is written). */
    memset(p, 0, len);
    for (size_t i = len; i < n; i++) p[i] ^= 0xff;
    struct reread rr = {fd, p, len, -1};
    pthread_t b;
    pthread_create(&b, NULL, blocked_reader, &rr);
    pthread_join(b, NULL);
    if (rr.got != (ssize_t)len) {
        perror("sigblock: pread with every signal blocked");
        return 1;
    }
    for (size_t i = 0; i < len; i++)
        if (p[i] != (unsigned char)(i * 13)) {
            fprintf(stderr, "sigblock: reread byte %zu is %d\n", i, p[i]);
            return 1;
        }
    printf("sigblock: ok\n");
    return 0;
}
