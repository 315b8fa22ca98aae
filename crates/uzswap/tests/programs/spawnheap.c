/* uzswap test program: children started with vfork+execve, posix_spawn and
 * system() whose path, argv, envp and file-action paths are small heap
 * objects (under --small-objects, region pages) that were evicted first.
 * Each child (/bin/sh) writes "$1$V" (an argument and an environment
 * variable) to a file whose name is a heap string too; the parent compares
 * the file with what it asked for. Usage: spawnheap DIR
 * Prints "spawnheap: ok, E of S string pages evicted before the spawns",
 * or what went wrong (exit 1). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ARG_LEN 3000
#define ENV_LEN 2000

static char *heap_str(const char *s) {
    char *p = malloc(strlen(s) + 1);
    if (!p) { printf("spawnheap: malloc\n"); exit(1); }
    return strcpy(p, s);
}

static char *pattern(size_t n, char base, const char *prefix) {
    size_t k = strlen(prefix);
    char *p = malloc(k + n + 1);
    if (!p) { printf("spawnheap: malloc\n"); exit(1); }
    memcpy(p, prefix, k);
    for (size_t i = 0; i < n; i++) p[k + i] = (char)(base + i % 26);
    p[k + n] = 0;
    return p;
}

/* Whether the page of `p` is resident (/proc/self/pagemap bit 63). */
static int resident(int pagemap, const void *p) {
    uint64_t e = 0;
    off_t off = (off_t)((uintptr_t)p / 4096) * 8;
    if (pread(pagemap, &e, 8, off) != 8) return 1;
    return (int)(e >> 63);
}

static int check_file(const char *path, const char *want, const char *who) {
    FILE *f = fopen(path, "r");
    if (!f) { printf("spawnheap: %s: no output file\n", who); return 0; }
    static char got[ARG_LEN + ENV_LEN + 16];
    size_t n = fread(got, 1, sizeof got - 1, f);
    fclose(f);
    got[n] = 0;
    if (strcmp(got, want) != 0) {
        printf("spawnheap: %s: child wrote %zu bytes, want %zu\n", who, n, strlen(want));
        return 0;
    }
    return 1;
}

static int wait_ok(pid_t pid, const char *who) {
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        printf("spawnheap: %s: child failed\n", who);
        return 0;
    }
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2) { printf("usage: spawnheap DIR\n"); return 2; }
    char tmp[4096];
    /* Everything a child needs, on the heap, before the filler. */
    char *sh = heap_str("/bin/sh");
    char *dash_c = heap_str("-c");
    char *script = heap_str("printf '%s' \"$1$V\" > \"$2\"");
    char *name = heap_str("sh");
    char *arg = pattern(ARG_LEN, 'a', "");
    char *env = pattern(ENV_LEN, 'A', "V=");
    snprintf(tmp, sizeof tmp, "%s/spawnheap.out", argv[1]);
    char *out = heap_str(tmp);
    snprintf(tmp, sizeof tmp, "printf '%%s' \"$V\" > '%s/spawnheap.sys'", argv[1]);
    char *sys_cmd = heap_str(tmp);
    snprintf(tmp, sizeof tmp, "%s/spawnheap.sys", argv[1]);
    char *sys_out = heap_str(tmp);
    /* sh -c SCRIPT sh ARG OUT: $0=sh $1=ARG $2=OUT; both arrays on the heap. */
    char **sh_args = malloc(7 * sizeof *sh_args);
    char **envp = malloc(2 * sizeof *envp);
    if (!sh_args || !envp) { printf("spawnheap: malloc\n"); return 1; }
    sh_args[0] = name; sh_args[1] = dash_c; sh_args[2] = script; sh_args[3] = name;
    sh_args[4] = arg; sh_args[5] = out; sh_args[6] = NULL;
    envp[0] = env; envp[1] = NULL;

    char *want = malloc(ARG_LEN + ENV_LEN + 1);
    strcpy(want, arg);
    strcat(want, env + 2);

    /* Fill the heap until every page holding those strings was evicted
     * (or 1 GiB of filler, whichever first). */
    int pm = open("/proc/self/pagemap", O_RDONLY);
    const void *strings[] = {sh, dash_c, script, name, arg, arg + ARG_LEN, env, env + ENV_LEN,
                             out, sys_cmd, envp, sh_args};
    size_t ns = sizeof strings / sizeof *strings, evicted = 0;
    for (size_t mib = 0; mib < 1024; mib++) {
        for (int i = 0; i < 1024; i++) {
            unsigned char *f = malloc(1000);
            if (!f) { printf("spawnheap: filler malloc\n"); return 1; }
            memset(f, (int)(mib + i), 1000);
        }
        if (pm < 0) continue;
        evicted = 0;
        for (size_t i = 0; i < ns; i++) evicted += !resident(pm, strings[i]);
        if (evicted == ns) break;
    }

    int ok = 1;
    /* vfork + open + dup2 + execve, all with heap strings. */
    pid_t pid = vfork();
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, 1) < 0) _exit(126);
        execve(sh, sh_args, envp);
        _exit(127);
    }
    ok &= wait_ok(pid, "vfork+execve") && check_file(out, want, "vfork+execve");
    unlink(out);

    /* posix_spawn with a file action on a heap path. */
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (posix_spawn(&pid, sh, &fa, NULL, sh_args, envp) != 0) pid = -1;
    posix_spawn_file_actions_destroy(&fa);
    ok &= wait_ok(pid, "posix_spawn") && check_file(out, want, "posix_spawn");

    /* system() with a heap command line, $V from our environment. */
    if (setenv("V", env + 2, 1) != 0) { printf("spawnheap: setenv\n"); return 1; }
    ok &= system(sys_cmd) == 0 && check_file(sys_out, env + 2, "system");

    if (ok) printf("spawnheap: ok, %zu of %zu string pages evicted before the spawns\n", evicted, ns);
    return !ok;
}
