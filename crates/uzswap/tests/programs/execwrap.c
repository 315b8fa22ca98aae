/* Fills MIB MiB and checks it (so that it is paged), then replaces itself
 * with PROGRAM ARGS by execv: the new image must be paged too.
 * Usage: execwrap MIB PROGRAM [ARGS…] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc < 3) return 2;
    size_t n = strtoul(argv[1], 0, 10) << 20;
    unsigned char *p = malloc(n);
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 7 + (i >> 12));
    usleep(200000); /* time for the pager to find and evict it */
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(i * 7 + (i >> 12))) { printf("execwrap: MISMATCH at %zu\n", i); return 1; }
    printf("execwrap: ok\n");
    fflush(stdout);
    execv(argv[2], argv + 2);
    perror("execv");
    return 1;
}
