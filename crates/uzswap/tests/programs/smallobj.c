/* uzswap test program: many small objects (malloc, calloc, realloc,
 * posix_memalign, strdup), each filled with a pattern of its own, far more
 * of them than the limit holds. A forked child checks every byte of every
 * object and frees and allocates its own; the parent reads a pipe into
 * small buffers (read(2) into paged memory), frees half, grows and shrinks
 * the rest with realloc (some past --min-alloc), and checks every byte
 * again. Prints "smallobj: ok" or the first difference (exit 1). */
#define _GNU_SOURCE
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 60000

static unsigned char *obj[N];
static size_t len[N];

static unsigned char byte_of(size_t i, size_t j) { return (unsigned char)(i * 131 + j * 7 + 1); }

static void fill(size_t i) {
    for (size_t j = 0; j < len[i]; j++) obj[i][j] = byte_of(i, j);
}

static int check(const char *who, size_t i) {
    for (size_t j = 0; j < len[i]; j++) {
        if (obj[i][j] != byte_of(i, j)) {
            printf("smallobj: %s: object %zu byte %zu is %u, want %u\n", who, i, j, obj[i][j],
                   byte_of(i, j));
            return 1;
        }
    }
    return 0;
}

static int check_all(const char *who) {
    for (size_t i = 0; i < N; i++)
        if (obj[i] && check(who, i)) return 1;
    return 0;
}

int main(void) {
    srand(7);
    for (size_t i = 0; i < N; i++) {
        len[i] = 16 + (size_t)(rand() % 1500);
        switch (i % 4) {
        case 0: obj[i] = malloc(len[i]); break;
        case 1: {
            obj[i] = calloc(1, len[i]);
            for (size_t j = 0; j < len[i]; j++)
                if (obj[i][j]) { printf("smallobj: calloc %zu not zero\n", i); return 1; }
            break;
        }
        case 2: {
            void *p = NULL;
            if (posix_memalign(&p, 64, len[i]) || ((uintptr_t)p & 63)) {
                printf("smallobj: posix_memalign %zu\n", i);
                return 1;
            }
            obj[i] = p;
            break;
        }
        default: obj[i] = malloc(len[i] / 2 + 1); obj[i] = realloc(obj[i], len[i]); break;
        }
        if (!obj[i] || malloc_usable_size(obj[i]) < len[i]) {
            printf("smallobj: allocation %zu\n", i);
            return 1;
        }
        fill(i);
    }
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        if (check_all("child")) _exit(1);
        for (size_t i = 0; i < N; i += 3) {
            free(obj[i]);
            obj[i] = malloc(len[i]);
            fill(i);
        }
        _exit(check_all("child after"));
    }
    int fds[2];
    if (pipe(fds)) return 1;
    for (size_t i = 1; i < N; i += 97) {
        /* The object's own bytes, written to a pipe and read back into it. */
        if (write(fds[1], obj[i], len[i]) != (ssize_t)len[i]) return 1;
        memset(obj[i], 0, len[i]);
        if (read(fds[0], obj[i], len[i]) != (ssize_t)len[i]) {
            perror("smallobj: read");
            return 1;
        }
    }
    for (size_t i = 0; i < N; i += 2) {
        free(obj[i]);
        obj[i] = NULL;
    }
    for (size_t i = 1; i < N; i += 2) {
        size_t was = len[i];
        len[i] = i % 50 == 1 ? 200000 : (i % 3 ? was * 2 : was / 2 + 1);
        obj[i] = realloc(obj[i], len[i]);
        if (!obj[i]) return 1;
        for (size_t j = 0; j < (was < len[i] ? was : len[i]); j++)
            if (obj[i][j] != byte_of(i, j)) {
                printf("smallobj: realloc %zu lost byte %zu\n", i, j);
                return 1;
            }
        fill(i);
    }
    char *s = strdup("a small string");
    if (check_all("parent")) return 1;
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status)) {
        printf("smallobj: child failed (status %d)\n", status);
        return 1;
    }
    printf("smallobj: ok (%s)\n", s);
    free(s);
    return 0;
}
