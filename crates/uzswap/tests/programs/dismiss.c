/* uzswap test program: madvise(MADV_DONTNEED / MADV_FREE) of parts of
 * paged memory, as allocators that purge and redis's fork child
 * ("dismissing" memory it has saved) do. A 32 MiB buffer has every other
 * MiB discarded: those parts read zero (or, after MADV_FREE, their old
 * bytes until the kernel reclaims them), the rest keeps its bytes, and
 * writes after the discard read back. Then 200k small objects (with
 * --small-objects, the small-object heap), and a forked child that
 * discards the pages inside a 64 KiB block of its own, checks every object
 * and prints its peak RSS (VmHWM). Prints "dismiss: ok" or the first
 * difference (exit 1). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1 << 20)
#define BUF (32 * MIB)
#define N 200000
#define OBJ 100

static unsigned char word(size_t i, int v) { return (unsigned char)(i * 131 + v * 17 + 1); }

static int check_buf(const unsigned char *b, int v, int zero_odd_mib) {
    for (size_t i = 0; i < BUF; i += 61) {
        int zero = zero_odd_mib && (i / MIB) % 2 == 1;
        unsigned char want = zero ? 0 : word(i, v);
        if (b[i] != want) {
            fprintf(stderr, "dismiss: buffer byte %zu is %u, not %u\n", i, b[i], want);
            return 1;
        }
    }
    return 0;
}

static long vm_hwm_kib(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) v = atol(line + 6);
    if (f) fclose(f);
    return v;
}

int main(void) {
    unsigned char *b = malloc(BUF);
    if (!b) return 1;
    for (size_t i = 0; i < BUF; i++) b[i] = word(i, 1);
    /* malloc's pointer may not be page aligned: discard whole pages. */
    uintptr_t base = ((uintptr_t)b + 4095) & ~(uintptr_t)4095;
    for (size_t m = 1; m < BUF / MIB - 1; m += 2) {
        int advice = m % 4 == 1 ? MADV_DONTNEED : MADV_FREE;
        if (madvise((void *)(base + m * MIB), MIB, advice) != 0) { perror("madvise"); return 1; }
    }
    /* Byte i lies in MiB (i / MIB) of the buffer, not of `base`: check
     * against what was discarded, page by page. */
    for (size_t i = 0; i < BUF; i += 61) {
        uintptr_t a = (uintptr_t)b + i;
        size_t m = (a - base) / MIB;
        int gone = a >= base + MIB && m % 2 == 1 && m < BUF / MIB - 1;
        unsigned char want = gone && m % 4 == 1 ? 0 : word(i, 1);
        /* MADV_FREE: the old bytes until the kernel reclaims them, then
         * zeros; both are right. */
        int either = gone && m % 4 == 3 && b[i] == 0;
        if (b[i] != want && !either) { fprintf(stderr, "dismiss: after discard, byte %zu is %u, not %u\n", i, b[i], want); return 1; }
    }
    for (size_t i = 0; i < BUF; i++) b[i] = word(i, 2);
    if (check_buf(b, 2, 0)) return 1;

    static unsigned char *obj[N];
    for (size_t i = 0; i < N; i++) {
        obj[i] = malloc(OBJ);
        if (!obj[i]) return 1;
        memset(obj[i], word(i, 3), OBJ);
    }
    pid_t pid = fork();
    if (pid < 0) { perror("fork"); return 1; }
    if (pid == 0) {
        unsigned char *q = malloc(64 << 10);
        if (!q) _exit(1);
        memset(q, 7, 64 << 10);
        uintptr_t qa = ((uintptr_t)q + 4095) & ~(uintptr_t)4095;
        if (madvise((void *)qa, 32 << 10, MADV_DONTNEED) != 0) { perror("child madvise"); _exit(1); }
        for (size_t j = 0; j < 32 << 10; j++)
            if (((unsigned char *)qa)[j] != 0) { fprintf(stderr, "dismiss: child block not zero\n"); _exit(1); }
        for (size_t i = 0; i < N; i++)
            for (size_t j = 0; j < OBJ; j++)
                if (obj[i][j] != word(i, 3)) { fprintf(stderr, "dismiss: child object %zu\n", i); _exit(1); }
        printf("dismiss: child peak %ld KiB\n", vm_hwm_kib());
        fflush(stdout);
        _exit(0);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "dismiss: child failed (status %d)\n", status);
        return 1;
    }
    for (size_t i = 0; i < N; i++)
        for (size_t j = 0; j < OBJ; j++)
            if (obj[i][j] != word(i, 3)) { fprintf(stderr, "dismiss: object %zu\n", i); return 1; }
    if (check_buf(b, 2, 0)) return 1;
    printf("dismiss: ok\n");
    return 0;
}
