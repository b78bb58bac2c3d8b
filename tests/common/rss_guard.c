/* rss_guard: runs a test program and fails it when its peak resident memory passed the limit
 * every test program must keep (2 GiB, ASan included: `make test` runs two at once on a machine
 * with 8 GB free). ctest starts every test executable through it (tests/CMakeLists.txt).
 *
 *   rss_guard PROGRAM [ARGS...]
 *
 * The program's exit status is passed on; a program that passed but peaked above
 * CUBEC_TEST_RSS_LIMIT_MB (default 2048; 0 turns the check off) exits 1 with a line naming the
 * peak. The peak is the largest of the program and the children it waited for (wait4's
 * ru_maxrss). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: rss_guard PROGRAM [ARGS...]\n");
        return 2;
    }
    long limit_mb = 2048;
    const char *env = getenv("CUBEC_TEST_RSS_LIMIT_MB");
    if (env && *env) {
        char *end = NULL;
        limit_mb = strtol(env, &end, 10);
        if (*end || limit_mb < 0) {
            fprintf(stderr, "rss_guard: CUBEC_TEST_RSS_LIMIT_MB is '%s', not a number of MiB\n",
                    env);
            return 2;
        }
    }
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "rss_guard: fork: %s\n", strerror(errno));
        return 2;
    }
    if (pid == 0) {
        execvp(argv[1], argv + 1);
        fprintf(stderr, "rss_guard: cannot run %s: %s\n", argv[1], strerror(errno));
        _exit(127);
    }
    /* Ctrl-C reaches the program too (one process group): wait for it and pass its end on. */
    signal(SIGINT, SIG_IGN);
    int status = 0;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR) {
            fprintf(stderr, "rss_guard: wait4: %s\n", strerror(errno));
            return 2;
        }
    if (WIFSIGNALED(status)) {
        signal(WTERMSIG(status), SIG_DFL);
        raise(WTERMSIG(status));
        return 128 + WTERMSIG(status);
    }
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    long peak_mb = ru.ru_maxrss / 1024; /* KiB on Linux */
    if (code == 0 && limit_mb && peak_mb > limit_mb) {
        fprintf(stderr,
                "rss_guard: %s passed but its resident memory peaked at %ld MiB, above the %ld MiB "
                "a test program may use (CUBEC_TEST_RSS_LIMIT_MB)\n",
                argv[1], peak_mb, limit_mb);
        return 1;
    }
    return code;
}
