#include "test_util.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <ftw.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_uint messages;

static void on_validation(void *user, const char *message)
{
    (void)user;
    atomic_fetch_add(&messages, 1);
    fprintf(stderr, "VALIDATION: %s\n", message);
}

unsigned test_validation_messages(void)
{
    return atomic_load(&messages);
}

cubec_device *test_device_open(void)
{
    /* Keep lavapipe and the validation layer loaded after the loader lets them go, so that
     * LeakSanitizer can name them in the stacks of the allocations they keep (tests/lsan.supp). */
    static int pinned;
    if (!pinned) {
        pinned = 1;
        dlopen("libvulkan_lvp.so", RTLD_NOW | RTLD_NODELETE);
        dlopen("libVkLayer_khronos_validation.so", RTLD_NOW | RTLD_NODELETE);
    }
    /* CUBEC_TEST_VALIDATION=0 is for machines without the Khronos layer (the GPU machine);
     * everywhere else the layer is on and any message fails the test. */
    const char *v = getenv("CUBEC_TEST_VALIDATION");
    int validation = !(v && v[0] == '0');
    cubec_device_desc desc = {.struct_size = sizeof(cubec_device_desc),
                              .validation = validation,
                              .on_validation = on_validation};
    cubec_device *d = NULL;
    cubec_status st = cubec_device_open(&desc, &d);
    if (st) fail_msg("cubec_device_open: %s", cubec_status_message(st));
    return d;
}

void test_device_close(cubec_device *device)
{
    cubec_device_close(device);
    unsigned n = atomic_load(&messages);
    if (n) fail_msg("the validation layer reported %u message(s)", n);
}

void test_assert_error(cubec_status st, cubec_code code, const char *needle, const char *expr,
                       const char *file, int line)
{
    if (!st) {
        fail_msg("%s:%d: %s succeeded; expected %s", file, line, expr, cubec_code_name(code));
        return;
    }
    cubec_code got = cubec_status_code(st);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", cubec_status_message(st));
    cubec_status_free(st);
    if (got != code)
        fail_msg("%s:%d: %s gave %s (%s); expected %s", file, line, expr, cubec_code_name(got), msg,
                 cubec_code_name(code));
    if (needle && !strstr(msg, needle))
        fail_msg("%s:%d: %s message \"%s\" lacks \"%s\"", file, line, expr, msg, needle);
}

uint32_t test_rand(uint32_t *state)
{
    uint32_t x = *state ? *state : 0x9e3779b9u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return x;
}

float test_randf(uint32_t *state)
{
    return (float)(test_rand(state) >> 8) / 8388608.0f - 1.0f;
}

const char *test_tmp_dir(void)
{
    const char *dir = getenv("TMPDIR");
    return dir && dir[0] ? dir : "/tmp";
}

void test_temp_dir(char *out, size_t cap, const char *prefix)
{
    snprintf(out, cap, "%s/%s_XXXXXX", test_tmp_dir(), prefix);
    if (!mkdtemp(out)) fail_msg("mkdtemp: %s", strerror(errno));
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void test_remove_tree(const char *dir)
{
    nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

size_t test_count_lines_with(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[1024];
    size_t n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, needle) != NULL;
    fclose(f);
    return n;
}

uint32_t test_count_entries(const char *dir, const char *kind)
{
    DIR *dp = opendir(dir);
    assert_non_null(dp);
    uint32_t n = 0;
    for (struct dirent *e; (e = readdir(dp));) {
        const char *dot = strrchr(e->d_name, '.');
        n += e->d_name[0] != '.' && dot && !strcmp(dot + 1, kind);
    }
    closedir(dp);
    return n;
}
