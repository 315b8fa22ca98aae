/* Built with -static: fills MIB MiB, prints "ready PID", waits for a line
 * on stdin, checks every byte and prints "ok" (or the first mismatch).
 * Usage: statichold MIB */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
    size_t n = (argc > 1 ? strtoul(argv[1], 0, 10) : 32) << 20;
    unsigned char *p = malloc(n);
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 13 + (i >> 12));
    printf("ready %d\n", getpid());
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof line, stdin)) return 2;
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(i * 13 + (i >> 12))) { printf("MISMATCH at %zu\n", i); return 1; }
    printf("ok\n");
    return 0;
}
