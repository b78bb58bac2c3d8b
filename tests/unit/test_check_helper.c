/* CUBEC_CHECK (cubec.h): a successful call falls through, a failed one prints the place, the call,
 * the code's name and the message on stderr, frees the status and exits the process with
 * EXIT_FAILURE. Each case runs in a child process (the macro exits), whose stderr comes back
 * through a pipe. */
#include "test_util.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs fn in a child with stderr on a pipe; returns the child's exit status (-1 if it did not exit
 * normally) and its stderr in out. */
static int run_child(void (*fn)(void), char *out, size_t out_size)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], STDERR_FILENO);
        fn();
        _exit(0);
    }
    close(fds[1]);
    size_t len = 0;
    ssize_t n;
    while (len + 1 < out_size && (n = read(fds[0], out + len, out_size - 1 - len)) > 0)
        len += (size_t)n;
    out[len] = '\0';
    close(fds[0]);
    int wstatus;
    assert_int_equal(waitpid(pid, &wstatus, 0), pid);
    return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
}

static cubec_status succeed(void)
{
    return NULL;
}

static void check_success(void)
{
    CUBEC_CHECK(succeed());
}

/* The line of the CUBEC_CHECK in check_failure, which the message must name. */
enum { failing_check_line = __LINE__ + 4 };
static void check_failure(void)
{
    /* NULL out_device: refused with CUBEC_INVALID_ARGUMENT before any Vulkan call. */
    CUBEC_CHECK(cubec_device_open(NULL, NULL));
    fprintf(stderr, "not reached\n");
}

static void test_success_falls_through(void **state)
{
    (void)state;
    char out[1024];
    assert_int_equal(run_child(check_success, out, sizeof out), 0);
    assert_string_equal(out, "");
}

static void test_failure_prints_and_exits(void **state)
{
    (void)state;
    char out[1024];
    int rc = run_child(check_failure, out, sizeof out);
    assert_int_equal(rc, EXIT_FAILURE);
    char expected[512];
    snprintf(expected, sizeof expected,
             "%s:%d: cubec_device_open(NULL, NULL): CUBEC_INVALID_ARGUMENT: "
             "cubec_device_open: out_device is NULL\n",
             __FILE__, (int)failing_check_line);
    assert_string_equal(out, expected);
    assert_null(strstr(out, "not reached"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_success_falls_through),
        cmocka_unit_test(test_failure_prints_and_exits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
