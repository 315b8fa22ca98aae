/* What a program sees of its own signal dispositions under uzswap, which
 * keeps a handler of its own where the program's core signals are left
 * at SIG_DFL: queries read SIG_DFL, the program's handlers are installed
 * and run, and each call returns the disposition the program set before.
 * Prints one "name ok|BAD" line per check. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile sig_atomic_t got;
static void on_quit(int sig) { got = sig; }

static void check(const char *name, int ok) { printf("%s %s\n", name, ok ? "ok" : "BAD"); }

int main(void)
{
    /* A large allocation: the runtime starts (and arms core dumps). */
    char *buf = malloc(16 << 20);
    memset(buf, 1, 16 << 20);
    struct sigaction now, old, act;
    memset(&act, 0, sizeof act);

    check("query-segv-dfl", sigaction(SIGSEGV, NULL, &now) == 0 && now.sa_handler == SIG_DFL);
    act.sa_handler = on_quit;
    check("set-own", sigaction(SIGQUIT, &act, &old) == 0 && old.sa_handler == SIG_DFL);
    raise(SIGQUIT);
    check("own-ran", got == SIGQUIT);
    check("query-own", sigaction(SIGQUIT, NULL, &now) == 0 && now.sa_handler == on_quit);
    act.sa_handler = SIG_DFL;
    check("back-to-dfl", sigaction(SIGQUIT, &act, &old) == 0 && old.sa_handler == on_quit);
    check("query-dfl", sigaction(SIGQUIT, NULL, &now) == 0 && now.sa_handler == SIG_DFL);
    check("signal-dfl", signal(SIGABRT, SIG_DFL) == SIG_DFL);
    check("signal-ign", signal(SIGABRT, SIG_IGN) == SIG_DFL && signal(SIGABRT, SIG_DFL) == SIG_IGN);
    check("buffer", buf[12345] == 1);
    return 0;
}
