/* Configuration: defaults, ini values, environment over ini, and refusals that name the key. */
#include "test_util.h"

#include "base/config.h"
#include "base/features.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *write_ini(const char *text)
{
    static char path[4096];
    snprintf(path, sizeof path, "%s/cubec_test_config_%d.ini", test_tmp_dir(), (int)getpid());
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
    /* A bad value names the file, the line and the key. */
    path = write_ini("[log]\nlevel = warn\n\n[device]\ntasks_max = 0x10\n");
    char where[4200];
    snprintf(where, sizeof where, "config %s:5: [device] tasks_max = '0x10'", path);
    ASSERT_ERROR(config_load_from(&c, path, 0), CUBEC_INVALID_ARGUMENT, where);
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
    assert_int_equal(log_level_parse("summary"), LOG_INFO);
    assert_int_equal(log_subsystem_parse("Memory"), LOG_SYS_MEMORY);
    assert_int_equal(log_subsystem_parse("streaming"), -1);
    assert_string_equal(log_subsystem_name(LOG_SYS_PROFILING), "profiling");
}

/* The subsystem list over the default level, a bare level for all, the environment replacing the
 * file's list, and bad entries named with their source. */
static void test_log_subsystems(void **state)
{
    (void)state;
    unsetenv("CUBEC_LOG_LEVEL");
    unsetenv("CUBEC_LOG");
    char *path = write_ini("[log]\nlevel = error\nsubsystems = memory=debug, compile=info\n");
    cubec_config c;
    ASSERT_OK(config_load_from(&c, path, 1));
    int expect[LOG_SYS_COUNT];
    for (int i = 0; i < LOG_SYS_COUNT; i++)
        expect[i] = LOG_ERROR;
    expect[LOG_SYS_MEMORY] = LOG_DEBUG;
    expect[LOG_SYS_COMPILE] = LOG_INFO;
    for (int i = 0; i < LOG_SYS_COUNT; i++)
        assert_int_equal(c.log_levels[i], expect[i]);
    assert_int_equal(c.log_level, LOG_ERROR);

    setenv("CUBEC_LOG", "debug,profiling=summary", 1);
    ASSERT_OK(config_load_from(&c, path, 1));
    for (int i = 0; i < LOG_SYS_COUNT; i++)
        assert_int_equal(c.log_levels[i], i == LOG_SYS_PROFILING ? LOG_INFO : LOG_DEBUG);

    setenv("CUBEC_LOG", "streams=warn", 1); /* replaces the file's list as a whole */
    setenv("CUBEC_LOG_LEVEL", "off", 1);
    ASSERT_OK(config_load_from(&c, path, 1));
    for (int i = 0; i < LOG_SYS_COUNT; i++)
        assert_int_equal(c.log_levels[i], i == LOG_SYS_STREAMS ? LOG_WARN : LOG_OFF);
    unsetenv("CUBEC_LOG_LEVEL");

    setenv("CUBEC_LOG", "memory=debug,gpu=info", 1);
    ASSERT_ERROR(config_load_from(&c, NULL, 1), CUBEC_INVALID_ARGUMENT, "entry 'gpu=info'");
    ASSERT_ERROR(config_load_from(&c, NULL, 1), CUBEC_INVALID_ARGUMENT, "environment CUBEC_LOG");
    setenv("CUBEC_LOG", "memory=loud", 1);
    ASSERT_ERROR(config_load_from(&c, NULL, 1), CUBEC_INVALID_ARGUMENT, "entry 'memory=loud'");
    setenv("CUBEC_LOG", "memory=debug,,compile=info", 1);
    ASSERT_ERROR(config_load_from(&c, NULL, 1), CUBEC_INVALID_ARGUMENT, "entry ''");
    unsetenv("CUBEC_LOG");
    path = write_ini("[log]\nsubsystems = verbose\n");
    ASSERT_ERROR(config_load_from(&c, path, 0), CUBEC_INVALID_ARGUMENT, "entry 'verbose'");
    ASSERT_ERROR(config_load_from(&c, path, 0), CUBEC_INVALID_ARGUMENT, path);
    unlink(path);

    ASSERT_OK(config_load_from(&c, NULL, 0)); /* no list: every subsystem has the default */
    for (int i = 0; i < LOG_SYS_COUNT; i++)
        assert_int_equal(c.log_levels[i], LOG_WARN);
}

/* [profiling] timing and trace, from the file and the environment, and their refusals. */
static void test_profiling_keys(void **state)
{
    (void)state;
    unsetenv("CUBEC_TIMING");
    unsetenv("CUBEC_TRACE");
    cubec_config c;
    ASSERT_OK(config_load_from(&c, NULL, 1));
    assert_int_equal(c.timing_system, 0);
    assert_string_equal(c.trace_file, "");
    char *path = write_ini("[profiling]\ntiming = system\ntrace = /tmp/t.json\n");
    ASSERT_OK(config_load_from(&c, path, 0));
    assert_int_equal(c.timing_system, 1);
    assert_string_equal(c.trace_file, "/tmp/t.json");
    setenv("CUBEC_TIMING", "device", 1);
    ASSERT_OK(config_load_from(&c, path, 1));
    assert_int_equal(c.timing_system, 0);
    setenv("CUBEC_TIMING", "gpu", 1);
    ASSERT_ERROR(config_load_from(&c, NULL, 1), CUBEC_INVALID_ARGUMENT,
                 "'gpu' is not device or system");
    unsetenv("CUBEC_TIMING");
    char longer[600];
    memset(longer, 'a', sizeof longer - 1);
    longer[sizeof longer - 1] = 0;
    setenv("CUBEC_TRACE", longer, 1);
    ASSERT_ERROR(config_load_from(&c, NULL, 1), CUBEC_INVALID_ARGUMENT, "[profiling] trace");
    unsetenv("CUBEC_TRACE");
}

/* [device] disable_features: a comma list of cubec_feature names, case-insensitive, with spaces;
 * empty names nothing; an unknown name or an empty entry is refused naming it. */
static void test_disable_features(void **state)
{
    (void)state;
    unsetenv("CUBEC_DISABLE_FEATURES");
    cubec_config c;
    ASSERT_OK(config_load_from(&c, NULL, 1));
    assert_int_equal(c.disabled_features, 0);
    char *path = write_ini("[device]\ndisable_features = float64, Storage_Buffer_16bit ,int8\n");
    ASSERT_OK(config_load_from(&c, path, 0));
    assert_int_equal(c.disabled_features, CUBEC_FEATURE_FLOAT64 |
                                              CUBEC_FEATURE_STORAGE_BUFFER_16BIT |
                                              CUBEC_FEATURE_INT8);
    setenv("CUBEC_DISABLE_FEATURES", "subgroup_clustered", 1);
    ASSERT_OK(config_load_from(&c, path, 1)); /* the environment replaces the file's list */
    assert_int_equal(c.disabled_features, CUBEC_FEATURE_SUBGROUP_CLUSTERED);
    setenv("CUBEC_DISABLE_FEATURES", "", 1);
    ASSERT_OK(config_load_from(&c, path, 1));
    assert_int_equal(c.disabled_features, 0);
    setenv("CUBEC_DISABLE_FEATURES", "float64,double", 1);
    ASSERT_ERROR(config_load_from(&c, NULL, 1), CUBEC_INVALID_ARGUMENT,
                 "environment CUBEC_DISABLE_FEATURES: [device] disable_features = "
                 "'float64,double': entry 'double' is not a feature name");
    setenv("CUBEC_DISABLE_FEATURES", "float64,,int8", 1);
    ASSERT_ERROR(config_load_from(&c, NULL, 1), CUBEC_INVALID_ARGUMENT, "entry ''");
    unsetenv("CUBEC_DISABLE_FEATURES");
    unlink(path);
}

/* An unknown key is a warning, not an error (a stray ./cubec.ini with a typo used to make every
 * device open in its directory fail): the file loads, the keys it does know apply, and the
 * warning names the file, the line and the nearest valid key, in the same section or another. */
static void test_unknown_keys_warn(void **state)
{
    (void)state;
    char *path = write_ini("[log]\nlevl = info\n; a comment\n[device]\ntasks_max = 9\n"
                           "[device]\nlevel = debug\n[memory]\nmax_byte = 5\n");
    cubec_config c;
    ASSERT_OK(config_load_from(&c, path, 0));
    assert_int_equal(c.tasks_max, 9);
    assert_int_equal(c.log_level, LOG_WARN); /* the misspelt key changed nothing */
    assert_int_equal(c.warning_count, 3);
    const char *want[3][2] = {
        {":2: unknown key [log] levl", "did you mean [log] level?"},
        {":7: unknown key [device] level", "did you mean [device] select?"},
        {":9: unknown key [memory] max_byte", "did you mean [memory] max_bytes?"}};
    for (int i = 0; i < 3; i++) {
        char head[4200];
        snprintf(head, sizeof head, "config %s%s", path, want[i][0]);
        if (strstr(c.warnings[i], head) != c.warnings[i] || !strstr(c.warnings[i], want[i][1]))
            fail_msg("warning %d is '%s', expected '%s' ... '%s'", i, c.warnings[i], head,
                     want[i][1]);
    }
    /* Past the kept messages, the rest are counted. */
    path = write_ini("[a]\nk1 = 1\nk2 = 2\nk3 = 3\nk4 = 4\nk5 = 5\nk6 = 6\n");
    ASSERT_OK(config_load_from(&c, path, 0));
    assert_int_equal(c.warning_count, 6);
    assert_non_null(strstr(c.warnings[CONFIG_MAX_WARNINGS - 1], ":5: unknown key [a] k4"));
    unlink(path);
}

/* config_warn_once logs each warning at warn level once per process, however many devices open
 * with the same file, and says how many were left out. */
static void test_unknown_keys_logged_once(void **state)
{
    (void)state;
    char log_path[4096];
    snprintf(log_path, sizeof log_path, "%s/cubec_test_config_log_%d.txt", test_tmp_dir(),
             (int)getpid());
    unlink(log_path);
    char *path = write_ini("[log]\nlevl = info\n[x]\na = 1\nb = 2\nc = 3\nd = 4\n");
    cubec_config c;
    ASSERT_OK(config_load_from(&c, path, 0));
    ASSERT_OK(log_configure(LOG_WARN, log_path));
    config_warn_once(&c);
    config_warn_once(&c);
    ASSERT_OK(log_configure(LOG_WARN, NULL));
    FILE *f = fopen(log_path, "r");
    assert_non_null(f);
    char line[2048];
    int levl = 0, more = 0, lines = 0;
    while (fgets(line, sizeof line, f)) {
        lines++;
        levl += strstr(line, "warn device] config") && strstr(line, "unknown key [log] levl") &&
                strstr(line, "did you mean [log] level?");
        more += strstr(line, ": 1 more unknown keys, ignored") != NULL;
    }
    fclose(f);
    unlink(log_path);
    unlink(path);
    assert_int_equal(levl, 1);
    assert_int_equal(more, 1);
    assert_int_equal(lines, CONFIG_MAX_WARNINGS + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_ini_and_environment),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_log_levels),
        cmocka_unit_test(test_log_subsystems),
        cmocka_unit_test(test_profiling_keys),
        cmocka_unit_test(test_disable_features),
        cmocka_unit_test(test_unknown_keys_warn),
        cmocka_unit_test(test_unknown_keys_logged_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
