/* CUBEC_ASSERT (src/base/assert.h): in a debug build a false condition prints where and what on
 * stderr and aborts (checked in a child process); a true one does nothing. In a release build
 * (NDEBUG) the condition is not even evaluated. */
#include "test_util.h"

#include "base/assert.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int evaluations;

static int counted(int value)
{
    evaluations++;
    return value;
}

#ifndef NDEBUG
static void break_invariant(void)
{
    CUBEC_ASSERT(counted(0) == 1);
}
#endif

static void test_true_condition_passes(void **state)
{
    (void)state;
    evaluations = 0;
    CUBEC_ASSERT(counted(1));
#ifdef NDEBUG
    assert_int_equal(evaluations, 0);
#else
    assert_int_equal(evaluations, 1);
#endif
}

static void test_false_condition(void **state)
{
    (void)state;
    evaluations = 0;
#ifdef NDEBUG
    CUBEC_ASSERT(counted(0) == 1);
    assert_int_equal(evaluations, 0); /* compiled out */
#else
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        break_invariant();
        fprintf(stderr, "survived\n"); /* not reached */
        _exit(0);
    }
    close(fds[1]);
    char text[1024];
    size_t used = 0;
    ssize_t n;
    while (used < sizeof text - 1 && (n = read(fds[0], text + used, sizeof text - 1 - used)) > 0)
        used += (size_t)n;
    text[used] = 0;
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
    /* "cubec: internal invariant broken at <this file>:<line> in break_invariant: <cond>\n" */
    char prefix[512];
    snprintf(prefix, sizeof prefix, "cubec: internal invariant broken at %s:", __FILE__);
    const char *suffix = " in break_invariant: counted(0) == 1\n";
    if (strncmp(text, prefix, strlen(prefix)) != 0 || used < strlen(prefix) + strlen(suffix) ||
        strcmp(text + used - strlen(suffix), suffix) != 0)
        fail_msg("unexpected report: %s", text);
    const char *line = text + strlen(prefix);
    assert_true(line[0] >= '1' && line[0] <= '9' && strtol(line, NULL, 10) > 0);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_true_condition_passes),
        cmocka_unit_test(test_false_condition),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
