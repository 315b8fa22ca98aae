/* The syscall guard and large file I/O: one write(2) of MIB MiB from a
 * paged buffer to DIR/bigio.dat, then one read(2) of the whole file into a
 * fresh paged buffer and one pread(2) of its second half at an odd offset
 * into another, each checked byte by byte. Under a limit far below MIB,
 * the guard must not hold a whole buffer resident for one call.
 * Prints "bigio: ok" or the first difference (exit 1).
 * Usage: bigio DIR MIB */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    close(fd);
    unlink(path);
    printf("bigio: ok\n");
    return 0;
}
