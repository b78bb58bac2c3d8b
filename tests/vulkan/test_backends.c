/* The backends come from one list, GPU_BACKENDS (src/gpu/gpu_backends.h): every row opens (the
 * null backend anywhere, Vulkan on lavapipe with the validation layer on), is chosen by its name
 * through the configuration (CUBEC_BACKEND) for opening, counting and peeking, and through
 * cubec_device_desc.backend; a name not in the list is refused naming the value and listing every
 * backend, wherever it is given. The expected names are the table's, read here, so that a new row
 * is covered without editing this test. */
#include "test_util.h"

#include "gpu/gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The names of the table, in order, as the test reads them from the macro itself. */
static const char *const names[] = {
#define NAME(name, open, count, peek) #name,
    GPU_BACKENDS(NAME)
#undef NAME
};
enum { NAMES = sizeof names / sizeof names[0] };

static void test_table_and_parse(void **state)
{
    (void)state;
    assert_int_equal(NAMES, GPU_BACKEND_COUNT);
    assert_string_equal(GPU_BACKEND_CHOICES, "vulkan|null|webgpu");
    for (int i = 0; i < NAMES; i++) {
        gpu_backend b = GPU_BACKEND_COUNT;
        ASSERT_OK(gpu_backend_parse(names[i], &b));
        assert_int_equal(b, i);
        assert_string_equal(gpu_backend_name(b), names[i]);
    }
    assert_null(gpu_backend_name(GPU_BACKEND_COUNT));
    /* NULL and "": the first row, the default. */
    gpu_backend b = GPU_BACKEND_COUNT;
    ASSERT_OK(gpu_backend_parse(NULL, &b));
    assert_int_equal(b, 0);
    ASSERT_OK(gpu_backend_parse("", &b));
    assert_int_equal(b, 0);
    /* Outside the table: refused, never sent to a default. */
    uint32_t count = 7;
    ASSERT_ERROR(gpu_device_count(GPU_BACKEND_COUNT, &count), CUBEC_INVALID_ARGUMENT,
                 "not a row of GPU_BACKENDS");
    gpu *g = NULL;
    ASSERT_ERROR(gpu_open(GPU_BACKEND_COUNT, NULL, &g), CUBEC_INVALID_ARGUMENT,
                 "not a row of GPU_BACKENDS");
    assert_null(g);
}

/* A refusal of `bad` names it and every backend of the table. */
static void expect_refused(cubec_status st, const char *where, const char *bad)
{
    if (!st) fail_msg("%s: backend '%s' was accepted", where, bad);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", cubec_status_message(st));
    cubec_code code = cubec_status_code(st);
    cubec_status_free(st);
    assert_int_equal(code, CUBEC_INVALID_ARGUMENT);
    if (!strstr(msg, bad)) fail_msg("%s: '%s' does not name '%s'", where, msg, bad);
    for (int i = 0; i < NAMES; i++)
        if (!strstr(msg, names[i])) fail_msg("%s: '%s' does not list '%s'", where, msg, names[i]);
}

static void test_bad_name_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {"cuda", "Vulkan", "null ", "metal"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cubec_device_desc desc = {.struct_size = sizeof(cubec_device_desc), .backend = bad[i]};
        cubec_device *d = NULL;
        expect_refused(cubec_device_open(&desc, &d), "cubec_device_desc.backend", bad[i]);
        assert_null(d);
        setenv("CUBEC_BACKEND", bad[i], 1);
        expect_refused(cubec_device_open(NULL, &d), "CUBEC_BACKEND open", bad[i]);
        assert_null(d);
        uint32_t count = 5;
        expect_refused(cubec_device_get_count(&count), "CUBEC_BACKEND count", bad[i]);
        assert_int_equal(count, 0);
        cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
        expect_refused(cubec_device_peek(0, &info), "CUBEC_BACKEND peek", bad[i]);
        gpu_backend b;
        expect_refused(gpu_backend_parse(bad[i], &b), "gpu_backend_parse", bad[i]);
        unsetenv("CUBEC_BACKEND");
    }
}

/* Every row opens, chosen through the configuration and through the desc; its devices are
 * counted and peeked through the configuration, and the opened device is one of them. */
static void test_every_backend_opens(void **state)
{
    (void)state;
    for (int i = 0; i < NAMES; i++) {
        setenv("CUBEC_BACKEND", names[i], 1);
        uint32_t count = 0;
        ASSERT_OK(cubec_device_get_count(&count));
        if (count == 0) fail_msg("backend %s: no device", names[i]);
        cubec_device_info peeked = CUBEC_DEVICE_INFO_INIT;
        ASSERT_OK(cubec_device_peek(0, &peeked));
        cubec_device *d = test_device_open(); /* the configuration's backend, validation on */
        cubec_device_info opened = CUBEC_DEVICE_INFO_INIT;
        ASSERT_OK(cubec_device_get_info(d, &opened));
        test_device_close(d);
        unsetenv("CUBEC_BACKEND");
        int found = 0;
        for (uint32_t k = 0; k < count && !found; k++) {
            cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
            ASSERT_OK(gpu_device_peek((gpu_backend)i, k, &info));
            found = !strcmp(info.name, opened.name);
        }
        if (!found)
            fail_msg("backend %s opened '%s', not a device it lists", names[i], opened.name);
        /* The desc names it too, past a configuration that names another row. */
        setenv("CUBEC_BACKEND", names[(i + 1) % NAMES], 1);
        cubec_device_desc desc = {.struct_size = sizeof(cubec_device_desc), .backend = names[i]};
        ASSERT_OK(cubec_device_open(&desc, &d));
        ASSERT_OK(cubec_device_get_info(d, &opened));
        cubec_device_close(d);
        unsetenv("CUBEC_BACKEND");
        if (strcmp(opened.name, peeked.name) != 0 && count == 1)
            fail_msg("backend %s by desc opened '%s', not '%s'", names[i], opened.name,
                     peeked.name);
    }
}

int main(void)
{
    unsetenv("CUBEC_BACKEND");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_and_parse),
        cmocka_unit_test(test_bad_name_refused),
        cmocka_unit_test(test_every_backend_opens),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
