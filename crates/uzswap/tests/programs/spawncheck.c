/* vfork+exec, posix_spawn, system() and fork+exec from a process with
 * paged memory: each child runs and exits 0; the parent's memory is intact.
 * Usage: spawncheck MIB */
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int wait_ok(pid_t pid, const char *what) {
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "spawncheck: %s failed\n", what);
        return 0;
    }
    return 1;
}

int main(int argc, char **argv) {
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 32, n = mib << 17;
    uint64_t *p = malloc(n * 8);
    for (size_t i = 0; i < n; i++) p[i] = i * 7;
    int ok = 1;
    char *args[] = {"/bin/sh", "-c", "exit 0", NULL};
    pid_t pid = vfork();
    if (pid == 0) { execve("/bin/sh", args, environ); _exit(127); }
    ok &= wait_ok(pid, "vfork+exec");
    if (posix_spawn(&pid, "/bin/sh", NULL, NULL, args, environ) != 0) pid = -1;
    ok &= wait_ok(pid, "posix_spawn");
    ok &= system("exit 0") == 0;
    pid = fork();
    if (pid == 0) { execve("/bin/sh", args, environ); _exit(127); }
    ok &= wait_ok(pid, "fork+exec");
    for (size_t i = 0; i < n; i++)
        if (p[i] != i * 7) { fprintf(stderr, "spawncheck: word %zu\n", i); ok = 0; break; }
    printf("spawncheck: %s\n", ok ? "ok" : "FAILED");
    return !ok;
}
