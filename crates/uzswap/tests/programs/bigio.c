/* The syscall guard and large file I/O: one write(2) of MIB MiB from a
 * paged buffer to DIR/bigio.dat, then one read(2) of the whole file into a
 * fresh paged buffer and one pread(2) of its second half at an odd offset
 * into another, each checked byte by byte. Then the vectored calls: one
 * writev(2) of the file again from three buffers (a small one on the stack
 * between two paged ones), one readv(2) of it into two fresh buffers and
 * one preadv(2) at an odd offset into a stack buffer and a paged one.
 * Under a limit far below MIB, the guard must not hold a whole buffer
 * resident for one call.
 * Prints "bigio: ok" or the first difference (exit 1).
 * Usage: bigio DIR MIB */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static unsigned char at(size_t i) { return (unsigned char)(i * 31 + (i >> 12) * 7); }

static int check(const unsigned char *p, size_t n, size_t from, const char *what) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != at(from + i)) {
            fprintf(stderr, "bigio: %s byte %zu is %d, not %d\n", what, i, p[i], at(from + i));
            return 1;
        }
    return 0;
}

static unsigned char *filled(size_t n, size_t from) {
    unsigned char *p = malloc(n);
    if (p)
        for (size_t i = 0; i < n; i++) p[i] = at(from + i);
    return p;
}

/* writev, readv and preadv of the whole file (len bytes) at once. */
static int vectored(int fd, size_t len) {
    unsigned char small[100];
    size_t n1 = len / 3 + 4097, n3 = len - n1 - sizeof small;
    unsigned char *w1 = filled(n1, 0), *w3 = filled(n3, n1 + sizeof small);
    if (!w1 || !w3) return 1;
    for (size_t i = 0; i < sizeof small; i++) small[i] = at(n1 + i);
    struct iovec wv[3] = {{w1, n1}, {small, sizeof small}, {w3, n3}};
    if (lseek(fd, 0, SEEK_SET) != 0) { perror("bigio: lseek"); return 1; }
    ssize_t r = writev(fd, wv, 3);
    if (r != (ssize_t)len) { fprintf(stderr, "bigio: writev returned %zd\n", r); return 1; }
    free(w1);
    free(w3);
    size_t h = len / 2 - 333;
    unsigned char *r1 = malloc(h), *r2 = malloc(len - h);
    struct iovec rv[2] = {{r1, h}, {r2, len - h}};
    if (lseek(fd, 0, SEEK_SET) != 0) { perror("bigio: lseek"); return 1; }
    r = readv(fd, rv, 2);
    if (r != (ssize_t)len) { fprintf(stderr, "bigio: readv returned %zd\n", r); return 1; }
    if (check(r1, h, 0, "readv first") || check(r2, len - h, h, "readv second")) return 1;
    free(r1);
    free(r2);
    size_t off = 777, rest = len - off - sizeof small;
    unsigned char *p2 = malloc(rest);
    struct iovec pv[2] = {{small, sizeof small}, {p2, rest}};
    memset(small, 0, sizeof small);
    r = preadv(fd, pv, 2, (off_t)off);
    if (r != (ssize_t)(len - off)) { fprintf(stderr, "bigio: preadv returned %zd\n", r); return 1; }
    if (check(small, sizeof small, off, "preadv small") ||
        check(p2, rest, off + sizeof small, "preadv paged"))
        return 1;
    free(p2);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) return 2;
    size_t len = strtoul(argv[2], NULL, 10) << 20;
    char path[4096];
    snprintf(path, sizeof path, "%s/bigio.dat", argv[1]);
    unsigned char *w = malloc(len);
    if (!w) return 1;
    for (size_t i = 0; i < len; i++) w[i] = at(i);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) { perror("bigio: open"); return 1; }
    ssize_t r = write(fd, w, len);
    if (r != (ssize_t)len) { fprintf(stderr, "bigio: write returned %zd\n", r); return 1; }
    free(w);
    unsigned char *a = malloc(len);
    if (lseek(fd, 0, SEEK_SET) != 0) { perror("bigio: lseek"); return 1; }
    r = read(fd, a, len);
    if (r != (ssize_t)len) { fprintf(stderr, "bigio: read returned %zd\n", r); return 1; }
    if (check(a, len, 0, "read")) return 1;
    free(a);
    size_t off = len / 2 + 12345, n = len - off;
    unsigned char *b = malloc(n);
    r = pread(fd, b, n, (off_t)off);
    if (r != (ssize_t)n) { fprintf(stderr, "bigio: pread returned %zd\n", r); return 1; }
    if (check(b, n, off, "pread")) return 1;
    /* Past the end: the short count of one call. */
    r = pread(fd, b, n, (off_t)(len - 100));
    if (r != 100 || check(b, 100, len - 100, "short pread")) {
        fprintf(stderr, "bigio: pread at the end returned %zd\n", r);
        return 1;
    }
    free(b);
    if (vectored(fd, len)) return 1;
    close(fd);
    unlink(path);
    printf("bigio: ok\n");
    return 0;
}
