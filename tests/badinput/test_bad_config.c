/* Bad configuration and environment (issue 11): every option of the ini file, every CUBEC_*
 * variable and the ranged fields of cubec_device_desc, given what they cannot take, make
 * cubec_device_open fail at once with CUBEC_INVALID_ARGUMENT naming the option (or variable) and
 * the value, and never hang:
 *  - CUBEC_CONFIG naming a FIFO (made here), /dev/zero, /dev/urandom, a directory, a file over
 *    the documented 1 MiB, a file with a NUL byte or a line longer than the ini parser reads;
 *  - CUBEC_TRACE and CUBEC_LOG_FILE (and their ini keys) naming a FIFO, a directory or a device;
 *  - each integer option below its minimum, above its maximum, far above (4e9, 2^64), and in
 *    forms that are not plain decimal integers; the documented bounds themselves are taken;
 *  - CUBEC_DEVICE=4294967296 (which used to pick device 0), the other kinds of option;
 *  - desc.tasks_max and desc.null_delay_us out of range.
 * The ranges and the 1 MiB limit written here are the reference: the ones docs/configuration.md
 * documents. The last test holds that document to the library's option table. A test that hangs
 * (a FIFO opened blocking) is caught by the ctest timeout; nothing here measures time. Devices
 * are opened on the null backend. */
#include "test_util.h"

#include "base/config.h"
#include "gpu/gpu.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef CUBEC_SOURCE_DIR
#error                                                                                             \
    "CUBEC_SOURCE_DIR (the source tree, for docs/configuration.md) is set by tests/CMakeLists.txt"
#endif

/* The documented limit of the ini file. */
#define DOC_CONFIG_MAX_BYTES 1048576u

static char fifo_path[128];
static char dir_path[200];
static char ini_path[200];

static const char *const all_variables[] = {
    "CUBEC_CONFIG",
    "CUBEC_LOG_LEVEL",
    "CUBEC_LOG",
    "CUBEC_LOG_FILE",
    "CUBEC_DEVICE",
    "CUBEC_VALIDATION",
    "CUBEC_TASKS_MAX",
    "CUBEC_POLL_SPIN_US",
    "CUBEC_PUSH_DESCRIPTORS",
    "CUBEC_FORCE_STAGING",
    "CUBEC_MAX_INFLIGHT_TASKS",
    "CUBEC_DISABLE_FEATURES",
    "CUBEC_BACKEND",
    "CUBEC_NULL_DELAY_US",
    "CUBEC_NULL_HEAP_BYTES",
    "CUBEC_NULL_NONCOHERENT",
    "CUBEC_STREAM_POLICY",
    "CUBEC_MAX_STREAMS",
    "CUBEC_TIMING",
    "CUBEC_TRACE",
    "CUBEC_STREAM_STRATEGY",
    "CUBEC_FAULT",
    "CUBEC_CACHE_DIR",
    "CUBEC_CACHE_MAX_BYTES",
};

static void unset_all(void)
{
    for (size_t i = 0; i < sizeof all_variables / sizeof all_variables[0]; i++)
        unsetenv(all_variables[i]);
}

/* Each test starts without CUBEC_* variables (ctest sets some) and with a FIFO and a directory
 * to name; they are gone after it, whatever happened. */
static int setup(void **state)
{
    (void)state;
    unset_all();
    snprintf(fifo_path, sizeof fifo_path, "%s/cubec_test_bad_config_%d.fifo", test_tmp_dir(),
             (int)getpid());
    snprintf(dir_path, sizeof dir_path, "%s/cubec_test_bad_config_%d.dir", test_tmp_dir(),
             (int)getpid());
    snprintf(ini_path, sizeof ini_path, "%s/cubec_test_bad_config_%d.ini", test_tmp_dir(),
             (int)getpid());
    unlink(fifo_path);
    rmdir(dir_path);
    if (mkfifo(fifo_path, 0600) != 0) fail_msg("mkfifo %s: %s", fifo_path, strerror(errno));
    if (mkdir(dir_path, 0700) != 0) fail_msg("mkdir %s: %s", dir_path, strerror(errno));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unset_all();
    unlink(fifo_path);
    rmdir(dir_path);
    unlink(ini_path);
    return 0;
}

static void write_ini(const void *bytes, size_t size)
{
    FILE *f = fopen(ini_path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, size, f), size);
    assert_int_equal(fclose(f), 0);
}

static void write_ini_text(const char *text)
{
    write_ini(text, strlen(text));
}

static cubec_status open_null(const cubec_device_desc *given, cubec_device **out)
{
    cubec_device_desc desc = given ? *given : (cubec_device_desc)CUBEC_DEVICE_DESC_INIT;
    desc.backend = "null";
    *out = NULL;
    return cubec_device_open(&desc, out);
}

/* Opens a null device under the current environment and expects CUBEC_INVALID_ARGUMENT with
 * every one of `needles` (NULL-terminated) in the message. */
static void expect_refused_(const cubec_device_desc *desc, const char *const *needles,
                            const char *where, int line)
{
    cubec_device *d = NULL;
    cubec_status st = open_null(desc, &d);
    if (!st) {
        cubec_device_close(d);
        fail_msg("%s:%d: the device opened; expected a refusal naming '%s'", where, line,
                 needles[0]);
    }
    cubec_code code = cubec_status_code(st);
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", cubec_status_message(st));
    cubec_status_free(st);
    assert_null(d);
    if (code != CUBEC_INVALID_ARGUMENT)
        fail_msg("%s:%d: %s (%s); expected CUBEC_INVALID_ARGUMENT", where, line,
                 cubec_code_name(code), msg);
    for (const char *const *n = needles; *n; n++)
        if (!strstr(msg, *n)) fail_msg("%s:%d: \"%s\" lacks \"%s\"", where, line, msg, *n);
}
#define EXPECT_REFUSED(desc, ...)                                                                  \
    expect_refused_((desc), (const char *const[]){__VA_ARGS__, NULL}, __FILE__, __LINE__)

/* Opens a null device under the current environment, which must succeed; returns its info. */
static cubec_device_info expect_opens(const cubec_device_desc *desc)
{
    cubec_device *d = NULL;
    ASSERT_OK(open_null(desc, &d));
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    cubec_device_close(d);
    return info;
}

/* ---- the ini file ----------------------------------------------------------------------- */

/* A FIFO would block the open (reading it waits for a writer) before the fix. */
static void test_config_fifo(void **state)
{
    (void)state;
    setenv("CUBEC_CONFIG", fifo_path, 1);
    EXPECT_REFUSED(NULL, "CUBEC_CONFIG", fifo_path, "is a FIFO, not a regular file");
    struct stat st;
    assert_int_equal(stat(fifo_path, &st), 0);
    assert_true(S_ISFIFO(st.st_mode)); /* untouched */
}

/* Devices that never end: reading them used to run until the host ran out of memory. */
static void test_config_devices(void **state)
{
    (void)state;
    const char *devices[] = {"/dev/zero", "/dev/urandom", "/dev/null"};
    for (size_t i = 0; i < sizeof devices / sizeof devices[0]; i++) {
        setenv("CUBEC_CONFIG", devices[i], 1);
        EXPECT_REFUSED(NULL, "CUBEC_CONFIG", devices[i], "is a character device");
    }
}

/* A directory used to be read as an empty file. */
static void test_config_directory(void **state)
{
    (void)state;
    setenv("CUBEC_CONFIG", dir_path, 1);
    EXPECT_REFUSED(NULL, "CUBEC_CONFIG", dir_path, "is a directory");
}

/* Exactly the documented limit is read; one byte more is refused unread. The file is comment
 * lines, and a key whose value shows that it was read. */
static void test_config_size_limit(void **state)
{
    (void)state;
    const char key[] = "[device]\ntasks_max = 7\n";
    char *text = malloc(DOC_CONFIG_MAX_BYTES + 1);
    assert_non_null(text);
    size_t n = strlen(key);
    memcpy(text, key, n);
    while (n < DOC_CONFIG_MAX_BYTES) { /* "#xxx...x\n" lines of 100 bytes, the last shorter */
        size_t line = DOC_CONFIG_MAX_BYTES - n < 100 ? DOC_CONFIG_MAX_BYTES - n : 100;
        memset(text + n, 'x', line);
        text[n] = '#';
        text[n + line - 1] = '\n';
        n += line;
    }
    write_ini(text, DOC_CONFIG_MAX_BYTES);
    setenv("CUBEC_CONFIG", ini_path, 1);
    assert_int_equal(expect_opens(NULL).tasks_max, 7);

    text[DOC_CONFIG_MAX_BYTES] = '\n';
    write_ini(text, DOC_CONFIG_MAX_BYTES + 1);
    char size[64];
    snprintf(size, sizeof size, "is %u bytes, more than the limit of %u", DOC_CONFIG_MAX_BYTES + 1,
             DOC_CONFIG_MAX_BYTES);
    EXPECT_REFUSED(NULL, "CUBEC_CONFIG", ini_path, size);
    free(text);
}

/* A NUL byte would end the parse early and silently drop what follows it. */
static void test_config_nul_byte(void **state)
{
    (void)state;
    const char text[] = "[device]\ntasks_max = 8\n\0tasks_max = 9\n";
    write_ini(text, sizeof text - 1);
    setenv("CUBEC_CONFIG", ini_path, 1);
    EXPECT_REFUSED(NULL, "CUBEC_CONFIG", ini_path, "NUL byte at offset 23");
}

/* inih reads lines of up to 198 bytes whole and would split a longer one, cutting its value
 * short: such a line is refused naming it, and one of 198 bytes keeps its whole value. */
static void test_config_long_line(void **state)
{
    (void)state;
    char line[300];
    const char prefix[] = "select = ";
    memset(line, 'q', sizeof line);
    memcpy(line, prefix, sizeof prefix - 1);
    line[198] = 0;
    char text[400];
    snprintf(text, sizeof text, "[device]\n%s\n", line);
    write_ini_text(text);
    cubec_config c;
    ASSERT_OK(config_load_from(&c, ini_path, 0));
    assert_int_equal(strlen(c.device), 198 - (sizeof prefix - 1)); /* all of it */

    line[198] = 'q';
    line[199] = 0;
    snprintf(text, sizeof text, "[device]\n%s\n", line);
    write_ini_text(text);
    setenv("CUBEC_CONFIG", ini_path, 1);
    EXPECT_REFUSED(NULL, "CUBEC_CONFIG", ini_path, "line 2 is 199 bytes, longer than the limit");
}

/* ---- output files ----------------------------------------------------------------------- */

/* CUBEC_TRACE naming a FIFO used to block the open until a reader came. */
static void test_trace_not_a_file(void **state)
{
    (void)state;
    const char *paths[] = {fifo_path, dir_path, "/dev/null"};
    const char *kinds[] = {"is a FIFO", "is a directory", "is a character device"};
    for (size_t i = 0; i < 3; i++) {
        setenv("CUBEC_TRACE", paths[i], 1);
        char value[200];
        snprintf(value, sizeof value, "'%s'", paths[i]);
        EXPECT_REFUSED(NULL, "environment CUBEC_TRACE", "[profiling] trace", value, kinds[i]);
    }
    unsetenv("CUBEC_TRACE");
    char text[300];
    snprintf(text, sizeof text, "[profiling]\ntrace = %s\n", fifo_path);
    write_ini_text(text);
    setenv("CUBEC_CONFIG", ini_path, 1);
    EXPECT_REFUSED(NULL, ini_path, "[profiling] trace", fifo_path, "is a FIFO");
}

/* The log file: a FIFO or a directory is refused (the FIFO used to block the open too); a
 * character device such as /dev/null is a fine place for log lines. */
static void test_log_file_not_a_file(void **state)
{
    (void)state;
    setenv("CUBEC_LOG_FILE", fifo_path, 1);
    EXPECT_REFUSED(NULL, "environment CUBEC_LOG_FILE", "[log] file", fifo_path, "is a FIFO");
    setenv("CUBEC_LOG_FILE", dir_path, 1);
    EXPECT_REFUSED(NULL, "environment CUBEC_LOG_FILE", dir_path, "is a directory");
    setenv("CUBEC_LOG_FILE", "/dev/null", 1);
    (void)expect_opens(NULL);
    char text[300];
    snprintf(text, sizeof text, "[log]\nfile = %s/no/such/dir/log\n", dir_path);
    write_ini_text(text);
    unsetenv("CUBEC_LOG_FILE");
    setenv("CUBEC_CONFIG", ini_path, 1);
    EXPECT_REFUSED(NULL, ini_path, "[log] file", "/no/such/dir/log", "cannot be opened");
}

/* The kernel cache's directory must be one (or `none`): a regular file, a FIFO or a device is
 * refused naming the key and the value, from the environment and from the ini file; a missing
 * directory and `none` are taken. */
static void test_cache_dir_not_a_directory(void **state)
{
    (void)state;
    const char *kinds[][2] = {{fifo_path, "is a FIFO, not a directory"},
                              {ini_path, "is a regular file, not a directory"},
                              {"/dev/null", "is a character device, not a directory"}};
    write_ini_text("[log]\n");
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        setenv("CUBEC_CACHE_DIR", kinds[i][0], 1);
        char value[200];
        snprintf(value, sizeof value, "[compile] cache_dir = '%s'", kinds[i][0]);
        EXPECT_REFUSED(NULL, "environment CUBEC_CACHE_DIR", value, kinds[i][1]);
        unsetenv("CUBEC_CACHE_DIR");
    }
    char text[300];
    snprintf(text, sizeof text, "[compile]\ncache_dir = %s\n", fifo_path);
    write_ini_text(text);
    setenv("CUBEC_CONFIG", ini_path, 1);
    EXPECT_REFUSED(NULL, ini_path, "[compile] cache_dir", fifo_path, "is a FIFO");
    unsetenv("CUBEC_CONFIG");
    const char *taken[] = {"none", "", "/tmp/cubec_test_bad_config_no_such_dir/cache", dir_path};
    for (size_t i = 0; i < sizeof taken / sizeof taken[0]; i++) {
        setenv("CUBEC_CACHE_DIR", taken[i], 1);
        cubec_config c;
        ASSERT_OK(config_load_from(&c, NULL, 1));
        assert_string_equal(c.cache_dir, taken[i]);
        unsetenv("CUBEC_CACHE_DIR");
    }
}

/* ---- ranges ----------------------------------------------------------------------------- */

typedef struct int_option {
    const char *env, *section, *key;
    long long min, max;
} int_option;

/* The documented ranges (docs/configuration.md). */
static const int_option int_options[] = {
    {"CUBEC_TASKS_MAX", "device", "tasks_max", 1, 65536},
    {"CUBEC_POLL_SPIN_US", "device", "poll_spin_us", -1, 1000000},
    {"CUBEC_MAX_INFLIGHT_TASKS", "device", "max_inflight_tasks", 1, 16777216},
    {"CUBEC_MAX_STREAMS", "streaming", "max_streams", 1, 4096},
    {"CUBEC_NULL_DELAY_US", NULL, "null_delay_us", 0, 10000000},
    {"CUBEC_NULL_HEAP_BYTES", NULL, "null_heap_bytes", 0, 1099511627776},
    {"CUBEC_CACHE_MAX_BYTES", "compile", "cache_max_bytes", 4096, 1125899906842624},
};

static int64_t loaded_value(const cubec_config *c, const char *env)
{
    if (!strcmp(env, "CUBEC_TASKS_MAX")) return c->tasks_max;
    if (!strcmp(env, "CUBEC_POLL_SPIN_US")) return c->poll_spin_us;
    if (!strcmp(env, "CUBEC_MAX_INFLIGHT_TASKS")) return c->max_inflight_tasks;
    if (!strcmp(env, "CUBEC_MAX_STREAMS")) return c->max_streams;
    if (!strcmp(env, "CUBEC_NULL_DELAY_US")) return c->null_delay_us;
    if (!strcmp(env, "CUBEC_NULL_HEAP_BYTES")) return c->null_heap_bytes;
    if (!strcmp(env, "CUBEC_CACHE_MAX_BYTES")) return c->cache_max_bytes;
    fail_msg("no field for %s", env);
    return 0;
}

/* Every integer option: out of range by one on either side, far out (4e9 used to be taken by
 * the desc, a million queued launches later the host ran out of memory), past 64 bits, and
 * forms that are not a plain decimal integer, from the environment and from the ini file. The
 * bounds are taken and applied. */
static void test_integer_ranges(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof int_options / sizeof int_options[0]; i++) {
        const int_option *o = &int_options[i];
        char range[64], below[32], above[32];
        snprintf(range, sizeof range, "is not an integer in %lld..%lld", o->min, o->max);
        snprintf(below, sizeof below, "%lld", o->min - 1);
        snprintf(above, sizeof above, "%lld", o->max + 1);
        const char *bad[] = {below, above, "4000000000", "4294967296", "99999999999999999999",
                             "4e9", "",    "+5",         "0x10",       "1.5",
                             "ten", " 5",  "5 ",         "--1",        "-"};
        for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
            /* The far values are bad for the smaller ranges only (a byte count takes 4e9). */
            char *end = NULL;
            long long v = strtoll(bad[b], &end, 10);
            if (b >= 2 && *bad[b] && !*end && v >= o->min && v <= o->max) continue;
            char value[64];
            snprintf(value, sizeof value, "= '%s'", bad[b]);
            setenv(o->env, bad[b], 1);
            EXPECT_REFUSED(NULL, o->env, value, range);
            unsetenv(o->env);
            /* inih trims the spaces around a value: " 5" is 5 in the file. */
            if (!o->section || bad[b][0] == ' ' || (bad[b][0] && bad[b][strlen(bad[b]) - 1] == ' '))
                continue;
            char text[200], key[80];
            snprintf(text, sizeof text, "[%s]\n%s = %s\n", o->section, o->key, bad[b]);
            snprintf(key, sizeof key, "[%s] %s", o->section, o->key);
            write_ini_text(text);
            setenv("CUBEC_CONFIG", ini_path, 1);
            EXPECT_REFUSED(NULL, ini_path, key, value, range);
            unsetenv("CUBEC_CONFIG");
        }
        const long long good[] = {o->min, o->max};
        for (size_t g = 0; g < 2; g++) {
            char text[32];
            snprintf(text, sizeof text, "%lld", good[g]);
            setenv(o->env, text, 1);
            cubec_config c;
            ASSERT_OK(config_load_from(&c, NULL, 1));
            assert_int_equal(loaded_value(&c, o->env), good[g]);
            unsetenv(o->env);
        }
    }
    /* The largest queue is a device that opens with it. */
    setenv("CUBEC_TASKS_MAX", "65536", 1);
    assert_int_equal(expect_opens(NULL).tasks_max, 65536);
}

/* The desc's fields with ranges: tasks_max 1..65536 (0: the configuration's), null_delay_us
 * 0..10000000. */
static void test_desc_ranges(void **state)
{
    (void)state;
    EXPECT_REFUSED(
        &((cubec_device_desc){.struct_size = sizeof(cubec_device_desc), .tasks_max = 4000000000u}),
        "desc->tasks_max", "4000000000", "1..65536");
    EXPECT_REFUSED(
        &((cubec_device_desc){.struct_size = sizeof(cubec_device_desc), .tasks_max = 65537}),
        "desc->tasks_max", "65537");
    EXPECT_REFUSED(&((cubec_device_desc){.struct_size = sizeof(cubec_device_desc),
                                         .null_delay_us = 4000000000u}),
                   "desc->null_delay_us", "4000000000", "0..10000000");
    EXPECT_REFUSED(
        &((cubec_device_desc){.struct_size = sizeof(cubec_device_desc), .null_delay_us = 10000001}),
        "desc->null_delay_us", "10000001");
    assert_int_equal(expect_opens(&((cubec_device_desc){.struct_size = sizeof(cubec_device_desc),
                                                        .tasks_max = 65536}))
                         .tasks_max,
                     65536);
    assert_int_equal(expect_opens(&((cubec_device_desc){.struct_size = sizeof(cubec_device_desc),
                                                        .tasks_max = 1}))
                         .tasks_max,
                     1);
    /* The desc wins over the environment, which is still checked. */
    setenv("CUBEC_TASKS_MAX", "9", 1);
    assert_int_equal(expect_opens(&((cubec_device_desc){.struct_size = sizeof(cubec_device_desc),
                                                        .tasks_max = 3}))
                         .tasks_max,
                     3);
}

/* CUBEC_DEVICE: all digits is an index; one that does not fit 32 bits used to wrap (4294967296
 * opened device 0). The largest index is taken, and not found. */
static void test_device_index(void **state)
{
    (void)state;
    const char *bad[] = {"4294967296", "18446744073709551616", "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("CUBEC_DEVICE", bad[i], 1);
        char value[64];
        snprintf(value, sizeof value, "'%s'", bad[i]);
        EXPECT_REFUSED(NULL, "CUBEC_DEVICE", value, "is not a device index in 0..4294967295");
    }
    setenv("CUBEC_DEVICE", "4294967295", 1);
    cubec_device *d = NULL;
    ASSERT_ERROR(open_null(NULL, &d), CUBEC_NOT_FOUND, "device index 4294967295");
    setenv("CUBEC_DEVICE", "0", 1);
    (void)expect_opens(NULL);
    setenv("CUBEC_DEVICE", "null", 1); /* a part of the null device's name */
    (void)expect_opens(NULL);
    char longer[300];
    memset(longer, 'n', sizeof longer - 1);
    longer[sizeof longer - 1] = 0;
    setenv("CUBEC_DEVICE", longer, 1);
    EXPECT_REFUSED(NULL, "CUBEC_DEVICE", "shorter than 256 bytes");
}

/* The other kinds of option, one bad value each, with what the refusal quotes. */
static void test_other_kinds(void **state)
{
    (void)state;
    const struct {
        const char *env, *value, *says;
    } cases[] = {
        {"CUBEC_VALIDATION", "maybe", "is not a boolean"},
        {"CUBEC_VALIDATION", "2", "is not a boolean"},
        {"CUBEC_PUSH_DESCRIPTORS", "", "is not a boolean"},
        {"CUBEC_FORCE_STAGING", "onn", "is not a boolean"},
        {"CUBEC_STREAM_POLICY", "per-cpu", "is not per-thread or single"},
        {"CUBEC_STREAM_STRATEGY", "", "is not interleave or sequential"},
        {"CUBEC_TIMING", "gpu", "is not device or system"},
        {"CUBEC_BACKEND", "cuda", "is not vulkan, null or webgpu"},
        {"CUBEC_LOG_LEVEL", "5", "is not one of off|error|warn|info|summary|debug"},
        {"CUBEC_LOG", "gpu=info", "entry 'gpu=info'"},
        {"CUBEC_DISABLE_FEATURES", "float64,warp", "entry 'warp'"},
        {"CUBEC_FAULT", "page:0", "needs a call number >= 1"},
        {"CUBEC_FAULT", "page:99999999999999999999", "larger than 18446744073709551615"},
        {"CUBEC_FAULT", "page:1,", "ends with an empty entry"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv(cases[i].env, cases[i].value, 1);
        char value[64];
        snprintf(value, sizeof value, "'%s'", cases[i].value);
        EXPECT_REFUSED(NULL, cases[i].env, value, cases[i].says);
        unsetenv(cases[i].env);
    }
    setenv("CUBEC_BACKEND", "", 1); /* empty: the default, as for cubec_device_get_count */
    cubec_config c;
    ASSERT_OK(config_load_from(&c, NULL, 1));
    assert_int_equal(c.backend, GPU_BACKEND_vulkan);
    char longer[600];
    memset(longer, 'a', sizeof longer - 1);
    longer[sizeof longer - 1] = 0;
    setenv("CUBEC_LOG_FILE", longer, 1);
    EXPECT_REFUSED(NULL, "CUBEC_LOG_FILE", "a path shorter than 512 bytes");
}

/* Every row of the library's option table, whatever it is, refuses a bad value naming its
 * variable and the value: no option is applied without a check. */
static void test_every_option_is_checked(void **state)
{
    (void)state;
    size_t count = 0;
    const config_option *options = config_options(&count);
    assert_true(count >= 19);
    for (size_t i = 0; i < count; i++) {
        const config_option *o = &options[i];
        char value[160];
        switch (o->kind) {
        case CONFIG_BOOL: snprintf(value, sizeof value, "sometimes"); break;
        case CONFIG_INT: snprintf(value, sizeof value, "%lld", (long long)o->max + 1); break;
        case CONFIG_SECONDS: snprintf(value, sizeof value, "%lld.5", (long long)o->max); break;
        case CONFIG_CHOICE: snprintf(value, sizeof value, "no-such-choice"); break;
        case CONFIG_LEVEL: snprintf(value, sizeof value, "loud"); break;
        case CONFIG_LOG_LIST: snprintf(value, sizeof value, "gpu=info"); break;
        case CONFIG_FEATURES: snprintf(value, sizeof value, "no_such_feature"); break;
        case CONFIG_DEVICE: snprintf(value, sizeof value, "4294967296"); break;
        case CONFIG_PATH: snprintf(value, sizeof value, "%s", fifo_path); break;
        case CONFIG_FAULTS: snprintf(value, sizeof value, "page:-1"); break;
        case CONFIG_POOLS: snprintf(value, sizeof value, "sliced:page=0"); break;
        case CONFIG_DIR: snprintf(value, sizeof value, "%s", fifo_path); break;
        }
        setenv(o->env, value, 1);
        char quoted[200];
        snprintf(quoted, sizeof quoted, "'%s'", value);
        EXPECT_REFUSED(NULL, o->env, quoted);
        unsetenv(o->env);
    }
}

/* ---- the document ----------------------------------------------------------------------- */

static char *read_doc(void)
{
    const char *path = CUBEC_SOURCE_DIR "/docs/configuration.md";
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    char *text = calloc(1, 1 << 20);
    assert_non_null(text);
    size_t n = fread(text, 1, (1 << 20) - 1, f);
    fclose(f);
    text[n] = 0;
    return text;
}

/* The table row of docs/configuration.md that names `env` in its environment column: the
 * columns are written into cols[0..4] (ini key, variable, values, default, what). */
static int doc_row(const char *doc, const char *env, char cols[5][1024])
{
    char needle[80];
    snprintf(needle, sizeof needle, "| `%s` |", env);
    const char *row = strstr(doc, needle);
    if (!row) return 0;
    while (row > doc && row[-1] != '\n')
        row--;
    const char *p = row + 1; /* past the leading '|' */
    for (int c = 0; c < 5; c++) {
        const char *bar = strchr(p, '|');
        const char *eol = strchr(p, '\n');
        if (!bar || (eol && bar > eol)) return 0;
        snprintf(cols[c], 1024, "%.*s", (int)(bar - p), p);
        p = bar + 1;
    }
    return 1;
}

/* docs/configuration.md and the option table agree: each option has a row with its ini key (or
 * "environment only"), an integer's range and default, a choice's values and a boolean's default
 * as the code has them; every variable of the table's rows is an option (or CUBEC_CONFIG); and
 * the ini file's limit is the documented 1 MiB. */
static void test_document_agrees(void **state)
{
    (void)state;
    char *doc = read_doc();
    size_t count = 0;
    const config_option *options = config_options(&count);
    static char cols[5][1024];
    for (size_t i = 0; i < count; i++) {
        const config_option *o = &options[i];
        if (!doc_row(doc, o->env, cols))
            fail_msg("docs/configuration.md has no row for %s", o->env);
        char key[128];
        if (o->section)
            snprintf(key, sizeof key, "`[%s] %s`", o->section, o->key);
        else
            snprintf(key, sizeof key, "(environment only)");
        if (!strstr(cols[0], key))
            fail_msg("%s: the row's key '%s' is not %s", o->env, cols[0], key);
        char want[160];
        switch (o->kind) {
        case CONFIG_INT:
        case CONFIG_SECONDS:
            snprintf(want, sizeof want, " `%lld..%lld`", (long long)o->min, (long long)o->max);
            if (!strstr(cols[2], want))
                fail_msg("%s: the values '%s' lack the range %s", o->env, cols[2], want);
            snprintf(want, sizeof want, " %lld", (long long)o->fallback);
            if (strncmp(cols[3], want, strlen(want)) != 0)
                fail_msg("%s: the default '%s' is not %s", o->env, cols[3], want);
            break;
        case CONFIG_BOOL:
            if (!strstr(cols[2], "boolean")) fail_msg("%s: '%s' is not boolean", o->env, cols[2]);
            if (strncmp(cols[3], o->fallback ? " on" : " off", o->fallback ? 3 : 4) != 0)
                fail_msg("%s: the default '%s' is not %s", o->env, cols[3],
                         o->fallback ? "on" : "off");
            break;
        case CONFIG_CHOICE: {
            const char *p = o->choices;
            for (;;) {
                const char *bar = strchr(p, '|');
                snprintf(want, sizeof want, "`%.*s`", (int)(bar ? bar - p : (long)strlen(p)), p);
                if (!strstr(cols[2], want))
                    fail_msg("%s: the values '%s' lack %s", o->env, cols[2], want);
                if (!bar) break;
                p = bar + 1;
            }
            break;
        }
        default: break;
        }
    }
    /* Every variable in a row of the table is an option, or the file's own. */
    for (const char *p = strstr(doc, "\n| "); p; p = strstr(p + 1, "\n| ")) {
        char env[64];
        const char *bar = strchr(p + 3, '|');
        if (!bar || sscanf(bar, "| `%63[A-Z_]` |", env) != 1) continue;
        int known = !strcmp(env, "CUBEC_CONFIG");
        for (size_t i = 0; i < count; i++)
            known |= !strcmp(options[i].env, env);
        if (!known) fail_msg("docs/configuration.md documents %s, which is not an option", env);
    }
    assert_int_equal(CONFIG_FILE_MAX_BYTES, DOC_CONFIG_MAX_BYTES);
    assert_non_null(strstr(doc, "1 MiB"));
    free(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_config_fifo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_devices, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cache_dir_not_a_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_size_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_nul_byte, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_long_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_trace_not_a_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_file_not_a_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_integer_ranges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_desc_ranges, setup, teardown),
        cmocka_unit_test_setup_teardown(test_device_index, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_kinds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_option_is_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_document_agrees, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
