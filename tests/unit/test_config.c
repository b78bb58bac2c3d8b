/* Configuration: defaults, ini values, environment over ini, and refusals that name the key. */
#include "test_util.h"

#include "base/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *write_ini(const char *text)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/cubec_test_config_%d.ini", (int)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static void test_defaults(void **state)
{
    (void)state;
    cubec_config c;
    ASSERT_OK(config_load_from(&c, NULL, 0));
    assert_int_equal(c.tasks_max, 32);
    assert_int_equal(c.log_level, LOG_WARN);
    assert_int_equal(c.validation, 0);
    assert_int_equal(c.poll_spin_us, -1);
    assert_string_equal(c.device, "");
}

static void test_ini_and_environment(void **state)
{
    (void)state;
    char *path = write_ini("[log]\nlevel = debug\nfile = /tmp/x.log\n"
                           "[device]\nselect = llvmpipe\nvalidation = on\ntasks_max = 7\n");
    cubec_config c;
    /* ctest sets some CUBEC_* variables; this test wants only the file. */
    const char *vars[] = {"CUBEC_LOG_LEVEL", "CUBEC_LOG_FILE", "CUBEC_DEVICE", "CUBEC_VALIDATION",
                          "CUBEC_TASKS_MAX"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    ASSERT_OK(config_load_from(&c, path, 1));
    assert_int_equal(c.tasks_max, 7);
    assert_int_equal(c.log_level, LOG_DEBUG);
    assert_int_equal(c.validation, 1);
    assert_string_equal(c.device, "llvmpipe");
    assert_string_equal(c.log_file, "/tmp/x.log");
    assert_string_equal(c.source, path);
    setenv("CUBEC_TASKS_MAX", "100", 1);
    ASSERT_OK(config_load_from(&c, path, 1));
    assert_int_equal(c.tasks_max, 100); /* the environment wins over the file */
    unsetenv("CUBEC_TASKS_MAX");
    unlink(path);
}

static void test_refusals(void **state)
{
    (void)state;
    cubec_config c;
    char *path = write_ini("[device]\ntasks_max = many\n");
    ASSERT_ERROR(config_load_from(&c, path, 0), CUBEC_INVALID_ARGUMENT, "tasks_max = 'many'");
    path = write_ini("[device]\nspeed = 11\n");
    ASSERT_ERROR(config_load_from(&c, path, 0), CUBEC_INVALID_ARGUMENT, "unknown key");
    path = write_ini("[device\nbroken\n");
    ASSERT_ERROR(config_load_from(&c, path, 0), CUBEC_INVALID_ARGUMENT, "line 1");
    unlink(path);
    ASSERT_ERROR(config_load_from(&c, "/nonexistent/cubec.ini", 0), CUBEC_INVALID_ARGUMENT,
                 "cannot be opened");
    setenv("CUBEC_VALIDATION", "perhaps", 1);
    ASSERT_ERROR(config_load_from(&c, NULL, 1), CUBEC_INVALID_ARGUMENT, "CUBEC_VALIDATION");
    unsetenv("CUBEC_VALIDATION");
    setenv("CUBEC_TASKS_MAX", "0", 1);
    ASSERT_ERROR(config_load_from(&c, NULL, 1), CUBEC_INVALID_ARGUMENT, "1..65536");
    unsetenv("CUBEC_TASKS_MAX");
}

static void test_log_levels(void **state)
{
    (void)state;
    assert_int_equal(log_level_parse("off"), LOG_OFF);
    assert_int_equal(log_level_parse("INFO"), LOG_INFO);
    assert_int_equal(log_level_parse("4"), LOG_DEBUG);
    assert_int_equal(log_level_parse("loud"), -1);
    assert_int_equal(log_level_parse(NULL), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_ini_and_environment),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_log_levels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
