/* What `uzswap bench syscalls --with-static` runs, linked statically:
 * fills HELD MiB (so that the pager registers its memory under the
 * bench's limit), then copies COUNT blocks of BS bytes from /dev/zero to
 * /dev/null through one heap buffer, as dd does. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: ddstatic BS(4k|1M) COUNT HELD_MIB\n");
        return 2;
    }
    size_t bs = strcmp(argv[1], "1M") == 0 ? 1 << 20 : 4096;
    long count = atol(argv[2]);
    size_t held = (size_t)atol(argv[3]) << 20;
    char *hold = malloc(held);
    char *buf = malloc(bs);
    if (!hold || !buf) return 1;
    memset(hold, 1, held);
    int in = open("/dev/zero", O_RDONLY), out = open("/dev/null", O_WRONLY);
    if (in < 0 || out < 0) return 1;
    for (long i = 0; i < count; i++) {
        if (read(in, buf, bs) != (ssize_t)bs || write(out, buf, bs) != (ssize_t)bs) return 1;
    }
    long sum = 0;
    for (size_t i = 0; i < held; i += 4096) sum += hold[i];
    printf("%ld\n", sum);
    return 0;
}
