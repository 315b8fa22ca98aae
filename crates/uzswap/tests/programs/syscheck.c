/* System calls on paged memory, for `uzswap run` tests: every buffer is a
 * large malloc (a region), used never touched or after being pushed out by
 * far more data than the limit, and every byte is checked. Exits 0 when all
 * is well; prints the failing step and exits 1 otherwise.
 * Usage: syscheck DIR [MIB of filler] [--io-uring]   (DIR: a folder for files) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/io_uring.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define BIG (4u << 20)
static size_t filler_mib = 64;
static const char *dir;

static void fail(const char *step) {
    fprintf(stderr, "syscheck: %s: %s\n", step, strerror(errno));
    exit(1);
}

static unsigned char pattern(size_t i, unsigned seed) { return (unsigned char)(i * 131 + seed * 7 + (i >> 12)); }

static void fill(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) p[i] = pattern(i, seed);
}

static void check(const unsigned char *p, size_t n, unsigned seed, const char *step) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != pattern(i, seed)) {
            fprintf(stderr, "syscheck: %s: byte %zu is %u, expected %u\n", step, i, p[i], pattern(i, seed));
            exit(1);
        }
}

/* Writes and reads FILLER MiB of other memory: pages written before are
 * evicted by the time this returns. */
static void push_out(void) {
    size_t n = filler_mib << 20;
    unsigned char *f = malloc(n);
    for (size_t i = 0; i < n; i += 4096) f[i] = (unsigned char)i;
    unsigned long s = 0;
    for (size_t i = 0; i < n; i += 4096) s += f[i];
    if (s == 12345) puts("");
    free(f);
}

static char *path(const char *name) {
    static char buf[4096];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return buf;
}

/* A file of BIG bytes of pattern `seed`, written from a region buffer that
 * was pushed out first (write(2) from evicted pages). */
static void make_file(const char *name, unsigned seed) {
    unsigned char *src = malloc(BIG);
    fill(src, BIG, seed);
    push_out();
    int fd = open(path(name), O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0) fail("open for writing");
    if (write(fd, src, BIG) != (ssize_t)BIG) fail("write from evicted pages");
    close(fd);
    free(src);
}

static int open_file(const char *name) {
    int fd = open(path(name), O_RDONLY);
    if (fd < 0) fail("open");
    return fd;
}

static void test_read_family(void) {
    make_file("a", 1);
    /* read into a never-touched buffer */
    unsigned char *b = malloc(BIG);
    int fd = open_file("a");
    if (read(fd, b, BIG) != (ssize_t)BIG) fail("read into never-touched pages");
    check(b, BIG, 1, "read into never-touched pages");
    /* pread into the same buffer after it was pushed out */
    push_out();
    memset(b, 0, 4096 * 3); /* touch some pages, leave others evicted */
    if (pread(fd, b, BIG, 0) != (ssize_t)BIG) fail("pread into evicted pages");
    check(b, BIG, 1, "pread into evicted pages");
    /* readv / preadv: two iovecs in a third region */
    struct iovec *iov = malloc(1 << 20);
    unsigned char *c = malloc(BIG);
    iov[0].iov_base = c;
    iov[0].iov_len = BIG / 2;
    iov[1].iov_base = c + BIG / 2;
    iov[1].iov_len = BIG / 2;
    push_out();
    lseek(fd, 0, SEEK_SET);
    if (readv(fd, iov, 2) != (ssize_t)BIG) fail("readv");
    check(c, BIG, 1, "readv");
    push_out();
    if (preadv(fd, iov, 2, 0) != (ssize_t)BIG) fail("preadv");
    check(c, BIG, 1, "preadv");
    close(fd);
    free(b);
    free(c);
    free(iov);
}

static void test_write_family(void) {
    unsigned char *s = malloc(BIG);
    fill(s, BIG, 2);
    push_out();
    int fd = open(path("b"), O_CREAT | O_TRUNC | O_RDWR, 0644);
    if (pwrite(fd, s, BIG, 0) != (ssize_t)BIG) fail("pwrite from evicted pages");
    struct iovec *iov = malloc(1 << 20);
    iov[0].iov_base = s;
    iov[0].iov_len = BIG / 4;
    iov[1].iov_base = s + BIG / 4;
    iov[1].iov_len = BIG - BIG / 4;
    push_out();
    if (lseek(fd, BIG, SEEK_SET) < 0 || writev(fd, iov, 2) != (ssize_t)BIG) fail("writev from evicted pages");
    unsigned char *back = malloc(2 * (size_t)BIG);
    if (pread(fd, back, 2 * (size_t)BIG, 0) != 2 * (ssize_t)BIG) fail("pread back");
    check(back, BIG, 2, "pwrite");
    check(back + BIG, BIG, 2, "writev");
    close(fd);
    free(s);
    free(back);
    free(iov);
}

static void test_pipe_and_socket(void) {
    int p[2];
    if (pipe(p) != 0) fail("pipe");
    unsigned char *s = malloc(1 << 20), *d = malloc(1 << 20);
    fill(s, 60000, 3);
    push_out();
    if (write(p[1], s, 60000) != 60000) fail("write to a pipe from evicted pages");
    if (read(p[0], d, 60000) != 60000) fail("read from a pipe into never-touched pages");
    check(d, 60000, 3, "pipe");
    close(p[0]);
    close(p[1]);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) fail("socketpair");
    /* sendmsg from evicted pages, its msghdr and iovec in a region too */
    struct msghdr *m = malloc(1 << 20);
    struct iovec *iov = (struct iovec *)((char *)m + 4096);
    memset(m, 0, sizeof *m);
    fill(s, 50000, 4);
    iov->iov_base = s;
    iov->iov_len = 50000;
    m->msg_iov = iov;
    m->msg_iovlen = 1;
    push_out();
    if (sendmsg(sv[0], m, 0) != 50000) fail("sendmsg from evicted pages");
    push_out();
    size_t got = 0;
    while (got < 50000) {
        ssize_t n = recv(sv[1], d + got, 50000 - got, 0);
        if (n <= 0) fail("recv into evicted pages");
        got += (size_t)n;
    }
    check(d, 50000, 4, "socketpair");
    close(sv[0]);
    close(sv[1]);
    free(s);
    free(d);
    free(m);
}

static void test_misc(void) {
    /* getrandom into never-touched pages: all 1 MiB written */
    unsigned char *r = malloc(1 << 20);
    size_t got = 0;
    while (got < (1u << 20)) {
        ssize_t n = getrandom(r + got, (1u << 20) - got, 0);
        if (n <= 0) fail("getrandom");
        got += (size_t)n;
    }
    /* stat into a struct in an evicted region page */
    struct stat *st = malloc(1 << 20);
    st->st_size = 1;
    push_out();
    if (stat(path("a"), st) != 0 || st->st_size != (off_t)BIG) fail("stat into evicted pages");
    /* a path string in an evicted region page */
    char *p = malloc(1 << 20);
    strcpy(p + 8192, path("a"));
    push_out();
    int fd = open(p + 8192, O_RDONLY);
    if (fd < 0) fail("open with the path in evicted pages");
    close(fd);
    free(r);
    free(st);
    free(p);
}

static void test_stdio(void) {
    /* fread / fwrite of 8 MiB blocks: glibc's own read and write paths */
    size_t n = 8u << 20;
    unsigned char *s = malloc(n), *d = malloc(n);
    fill(s, n, 5);
    push_out();
    FILE *f = fopen(path("c"), "w+");
    if (!f || fwrite(s, 1, n, f) != n) fail("fwrite");
    rewind(f);
    if (fread(d, 1, n, f) != n) fail("fread");
    check(d, n, 5, "fread");
    fclose(f);
    free(s);
    free(d);
}

static void test_direct_io(void) {
    unsigned char *b = aligned_alloc(1 << 20, BIG);
    int fd = open(path("a"), O_RDONLY | O_DIRECT);
    if (fd < 0) {
        printf("syscheck: O_DIRECT not supported in %s: skipped that step\n", dir);
        free(b);
        return;
    }
    push_out();
    if (read(fd, b, BIG) != (ssize_t)BIG) fail("O_DIRECT read");
    check(b, BIG, 1, "O_DIRECT read");
    close(fd);
    free(b);
}

/* A blocking read whose buffer is evicted or write-protected (aging) while
 * the call waits: another thread pushes memory through meanwhile. */
struct waiter {
    int fd;
    unsigned char *buf;
    ssize_t got;
};

static void *blocked_reader(void *arg) {
    struct waiter *w = arg;
    struct pollfd *pfd = (struct pollfd *)(w->buf + (1 << 20));
    pfd->fd = w->fd;
    pfd->events = POLLIN;
    if (poll(pfd, 1, -1) != 1) w->got = -2;
    else w->got = read(w->fd, w->buf, 65536);
    return NULL;
}

static void test_blocked_call(void) {
    int p[2];
    if (pipe(p) != 0) fail("pipe");
    struct waiter w = {p[0], malloc(2 << 20), 0};
    memset(w.buf, 9, 2 << 20); /* resident and written: aging protects it */
    pthread_t t;
    pthread_create(&t, NULL, blocked_reader, &w);
    usleep(50000);
    push_out();
    push_out();
    unsigned char *s = malloc(1 << 20);
    fill(s, 65536, 6);
    if (write(p[1], s, 65536) != 65536) fail("write to wake the reader");
    pthread_join(t, NULL);
    if (w.got != 65536) {
        errno = w.got == -2 ? EINVAL : errno;
        fail("blocked poll/read on a buffer pushed out meanwhile");
    }
    check(w.buf, 65536, 6, "blocked read");
    close(p[0]);
    close(p[1]);
    free(w.buf);
    free(s);
}

/* One IORING_OP_READ into a never-touched region buffer, through raw
 * io_uring system calls. The kernel (its io-wq workers) fills the buffer
 * asynchronously: with kernel faults handled that is served like any
 * fault; the syscall guard does not cover it (README). */
static void test_io_uring(void) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    int ring = (int)syscall(__NR_io_uring_setup, 4, &p);
    if (ring < 0) {
        printf("syscheck: io_uring unavailable (%s): skipped that step\n", strerror(errno));
        return;
    }
    size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    char *sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQ_RING);
    char *cq = mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_CQ_RING);
    struct io_uring_sqe *sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
                                     MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
    if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) fail("io_uring mmap");
    unsigned char *buf = malloc(BIG);
    push_out();
    int fd = open_file("a");
    struct io_uring_sqe *e = &sqes[0];
    memset(e, 0, sizeof *e);
    e->opcode = IORING_OP_READ;
    e->fd = fd;
    e->addr = (unsigned long)buf;
    e->len = BIG;
    e->off = 0;
    unsigned *tail = (unsigned *)(sq + p.sq_off.tail);
    unsigned *array = (unsigned *)(sq + p.sq_off.array);
    array[*tail & *(unsigned *)(sq + p.sq_off.ring_mask)] = 0;
    __atomic_store_n(tail, *tail + 1, __ATOMIC_RELEASE);
    if (syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) < 0) fail("io_uring_enter");
    unsigned *head = (unsigned *)(cq + p.cq_off.head);
    struct io_uring_cqe *cqe = (struct io_uring_cqe *)(cq + p.cq_off.cqes) + (*head & *(unsigned *)(cq + p.cq_off.ring_mask));
    if (cqe->res != (int)BIG) {
        errno = cqe->res < 0 ? -cqe->res : EIO;
        fail("io_uring read into never-touched pages");
    }
    __atomic_store_n(head, *head + 1, __ATOMIC_RELEASE);
    check(buf, BIG, 1, "io_uring read");
    close(fd);
    close(ring);
    free(buf);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: syscheck DIR [MIB]\n");
        return 2;
    }
    dir = argv[1];
    if (argc > 2) filler_mib = strtoul(argv[2], NULL, 10);
    test_read_family();
    test_write_family();
    test_pipe_and_socket();
    test_misc();
    test_stdio();
    test_direct_io();
    test_blocked_call();
    if (argc > 3 && strcmp(argv[3], "--io-uring") == 0) test_io_uring();
    puts("syscheck: ok");
    return 0;
}
