/* uzswap test program: a vfork child takes the program's allocator past
 * the small-object threshold (it shares its parent's memory, the
 * preload's counters included), then exits; the parent then fills and
 * checks 60k small objects (6 MiB) and a 16 MiB buffer. The child must
 * not start the small-object heap (which would start a runtime in the
 * vfork child, whose threads die with it): the parent starts it at its
 * own next count. A second vfork child then allocates from the started
 * heap, reads the parent's (evicted) objects and frees its blocks; the
 * parent checks everything again. alarm(120) turns a hang into a failure.
 * Prints "vforkheap: ok" or the first difference (exit 1).
 * Usage: vforkheap (run with --small-objects-after 1M) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define OBJS 60000
#define OBJ 100

static unsigned char *obj[OBJS];

int main(void) {
    alarm(120);
    pid_t pid = vfork();
    if (pid < 0) {
        perror("vfork");
        return 1;
    }
    if (pid == 0) {
        /* 4 MiB of small blocks, never freed (the parent's heap). */
        for (int i = 0; i < 4 * 1024 * 1024 / 64; i++) {
            volatile char *p = malloc(64);
            if (!p) _exit(2);
            p[0] = 1;
        }
        _exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("vforkheap: child failed (status %d)\n", status);
        return 1;
    }
    for (int i = 0; i < OBJS; i++) {
        obj[i] = malloc(OBJ);
        if (!obj[i]) {
            printf("vforkheap: malloc failed at %d\n", i);
            return 1;
        }
        memset(obj[i], (unsigned char)(i * 7 + 1), OBJ);
    }
    size_t big_len = 16 << 20;
    unsigned char *big = malloc(big_len);
    if (!big) return 1;
    for (size_t i = 0; i < big_len; i++) big[i] = (unsigned char)(i * 13 + 5);
    for (int i = 0; i < OBJS; i++)
        for (int j = 0; j < OBJ; j++)
            if (obj[i][j] != (unsigned char)(i * 7 + 1)) {
                printf("vforkheap: object %d byte %d differs\n", i, j);
                return 1;
            }
    for (size_t i = 0; i < big_len; i++)
        if (big[i] != (unsigned char)(i * 13 + 5)) {
            printf("vforkheap: buffer byte %zu differs\n", i);
            return 1;
        }
    /* A second vfork child, now that the heap serves: it allocates from
     * it, reads the parent's objects (most of them evicted, faulted back
     * in the child) and frees its own blocks. */
    pid = vfork();
    if (pid < 0) {
        perror("vfork");
        return 1;
    }
    if (pid == 0) {
        static unsigned char *mine[2000];
        for (int i = 0; i < 2000; i++) {
            mine[i] = malloc(64);
            if (!mine[i]) _exit(2);
            memset(mine[i], 0x5a, 64);
        }
        for (int i = 0; i < OBJS; i += 7)
            if (obj[i][OBJ - 1] != (unsigned char)(i * 7 + 1)) _exit(3);
        for (int i = 0; i < 2000; i++)
            if (mine[i][63] != 0x5a) _exit(4);
        for (int i = 0; i < 2000; i++) free(mine[i]);
        _exit(0);
    }
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        printf("vforkheap: second child failed (status %d)\n", status);
        return 1;
    }
    for (int i = 0; i < OBJS; i++)
        for (int j = 0; j < OBJ; j++)
            if (obj[i][j] != (unsigned char)(i * 7 + 1)) {
                printf("vforkheap: object %d byte %d differs after the second child\n", i, j);
                return 1;
            }
    printf("vforkheap: ok\n");
    return 0;
}
