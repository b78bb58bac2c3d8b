/* Every memory preset ([memory] preset, docs/memory.md) on a real device (and, as
 * test_memory_presets_null, on the null backend): buffers of many sizes are written, copied on the
 * device, partly released and replaced, and every buffer read back equals the bytes a host model
 * holds. The report names the preset and lays out its pools as docs/memory.md says. Bad layouts
 * fail the open naming the key and the value; the ini file's pools lines add up. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KiB 1024ull
#define MiB (1024ull * KiB)

enum { SLOTS = 24 };

typedef struct model_buffer {
    cubec_buffer b;
    uint64_t size;
    uint8_t *bytes; /* what the buffer must hold */
} model_buffer;

static void set_layout(const char *preset, const char *pools)
{
    if (preset)
        setenv("CUBEC_MEMORY_PRESET", preset, 1);
    else
        unsetenv("CUBEC_MEMORY_PRESET");
    if (pools)
        setenv("CUBEC_MEMORY_POOLS", pools, 1);
    else
        unsetenv("CUBEC_MEMORY_POOLS");
}

static uint64_t pick_size(uint32_t *rng)
{
    uint32_t r = test_rand(rng) % 10;
    if (r < 6) return 1 + test_rand(rng) % (64 * KiB); /* small */
    if (r < 9) return 64 * KiB + test_rand(rng) % (3 * MiB);
    return 4 * MiB + test_rand(rng) % (6 * MiB); /* grows an arena, takes an exclusive page */
}

static void make_buffer(cubec_device *d, cubec_stream s, model_buffer *m, uint32_t *rng)
{
    m->size = pick_size(rng);
    ASSERT_OK(cubec_buffer_create(d, s, m->size, &m->b));
    m->bytes = malloc(m->size);
    assert_non_null(m->bytes);
    for (uint64_t i = 0; i < m->size; i++)
        m->bytes[i] = (uint8_t)test_rand(rng);
    ASSERT_OK(cubec_write(d, s, m->b, 0, m->bytes, m->size));
}

static void drop_buffer(cubec_device *d, model_buffer *m)
{
    ASSERT_OK(cubec_buffer_release(d, m->b));
    free(m->bytes);
    m->bytes = NULL;
}

static void check_all(cubec_device *d, cubec_stream s, model_buffer *m)
{
    for (int i = 0; i < SLOTS; i++) {
        uint8_t *got = malloc(m[i].size);
        assert_non_null(got);
        ASSERT_OK(cubec_read(d, s, m[i].b, 0, got, m[i].size));
        if (memcmp(got, m[i].bytes, m[i].size) != 0)
            fail_msg("buffer %d (%llu bytes) does not hold what was written", i,
                     (unsigned long long)m[i].size);
        free(got);
    }
}

/* Allocates, writes, copies on the device, replaces half the buffers twice, and checks every
 * byte against the model after each round. Returns the stream's report at the end. */
static char exercised_backend[16]; /* the backend of exercise's last device */

static void exercise(const char *preset, const char *pools, cubec_memory_report *out)
{
    set_layout(preset, pools);
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    snprintf(exercised_backend, sizeof exercised_backend, "%s", info.backend);
    cubec_stream s;
    ASSERT_OK(cubec_stream_new(d, &s));
    uint32_t rng = 12345;
    model_buffer m[SLOTS];
    for (int i = 0; i < SLOTS; i++)
        make_buffer(d, s, &m[i], &rng);
    check_all(d, s, m);
    for (int round = 0; round < 2; round++) {
        for (int i = round; i < SLOTS; i += 2) {
            drop_buffer(d, &m[i]);
            make_buffer(d, s, &m[i], &rng);
        }
        /* A device copy between neighbours: the model copies the same bytes. */
        for (int i = 0; i + 1 < SLOTS; i += 3) {
            uint64_t n = m[i].size < m[i + 1].size ? m[i].size : m[i + 1].size;
            n = n / 4 * 4;
            if (!n) continue;
            ASSERT_OK(cubec_copy(d, s, m[i].b, 0, m[i + 1].b, 0, n));
            memcpy(m[i + 1].bytes, m[i].bytes, n);
        }
        check_all(d, s, m);
    }
    ASSERT_OK(cubec_memory_report_get(d, s, out));
    uint64_t in_use = 0;
    for (int i = 0; i < SLOTS; i++)
        in_use += m[i].size;
    assert_int_equal(out->allocations, SLOTS);
    assert_int_equal(out->bytes_in_use, in_use);
    for (int i = 0; i < SLOTS; i++)
        drop_buffer(d, &m[i]);
    ASSERT_OK(cubec_memory_cleanup(d, s));
    cubec_memory_report after = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, s, &after));
    assert_int_equal(after.allocations, 0);
    assert_int_equal(after.bytes_reserved, 0);
    test_device_close(d);
    set_layout(NULL, NULL);
}

static uint32_t buffer_pools(const cubec_memory_report *r, const char *kind)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->pool_count; i++)
        n += !strcmp(r->pools[i].kind, kind);
    return n;
}

/* The default, auto, and the ladder: auto is exclusive on webgpu (one WGPUBuffer per
 * allocation: WebGPU orders work per buffer object) and the ladder elsewhere. */
static void test_ladder(void **state)
{
    (void)state;
    const char *defaults[] = {NULL, "auto"};
    for (int i = 0; i < 2; i++) {
        cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
        exercise(defaults[i], NULL, &r);
        int webgpu = !strcmp(exercised_backend, "webgpu");
        assert_string_equal(r.preset, webgpu ? "exclusive" : "ladder");
        assert_int_equal(buffer_pools(&r, "sliced") >= 1, !webgpu);
        if (!webgpu) assert_int_equal(buffer_pools(&r, "exclusive"), 1);
    }
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    exercise("ladder", NULL, &r);
    assert_string_equal(r.preset, "ladder");
    assert_true(buffer_pools(&r, "sliced") >= 1);
    assert_int_equal(buffer_pools(&r, "exclusive"), 1);
}

static void test_exclusive(void **state)
{
    (void)state;
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    exercise("exclusive", NULL, &r);
    assert_string_equal(r.preset, "exclusive");
    assert_int_equal(buffer_pools(&r, "sliced"), 0);
    assert_true(buffer_pools(&r, "exclusive") >= 10);
    /* Largest allocations rise pool by pool, from 32 KiB. */
    assert_int_equal(r.pools[0].page_size, 32 * KiB);
    for (uint32_t i = 1; i < r.pool_count && !strcmp(r.pools[i].kind, "exclusive"); i++)
        assert_true(r.pools[i].page_size > r.pools[i - 1].page_size);
}

static void test_custom(void **state)
{
    (void)state;
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    /* A small cap, so that the run spills into the next pool. */
    exercise(NULL,
             "sliced:page=1MiB,max_slice=64KiB,cap=1MiB; sliced:page=8MiB,max_slice=4MiB; "
             "exclusive:dealloc_period=100",
             &r);
    assert_string_equal(r.preset, "custom");
    assert_string_equal(r.pools[0].kind, "sliced");
    assert_int_equal(r.pools[0].page_size, 1 * MiB);
    assert_int_equal(r.pools[0].max_slice_size, 64 * KiB);
    assert_int_equal(r.pools[0].cap, 1 * MiB);
    assert_true(r.pools[0].pages <= 1);
    assert_int_equal(r.pools[1].page_size, 8 * MiB);
    assert_int_equal(r.pools[1].cap, 0);
    assert_string_equal(r.pools[2].kind, "exclusive");
    assert_int_equal(r.pools[2].dealloc_period, 100);
}

static void test_adaptive(void **state)
{
    (void)state;
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    exercise("adaptive", NULL, &r);
    assert_string_equal(r.preset, "adaptive");
    assert_string_equal(r.pools[0].kind, "sliced");
    assert_int_equal(r.pools[0].page_size, 8 * MiB);
    assert_int_equal(r.pools[0].max_slice_size, 1 * MiB);
    assert_string_equal(r.pools[1].kind, "arena");
    /* The arena grew past its smallest page for the largest buffers (4 MiB and more). */
    assert_true(r.pools[1].page_size > 2 * MiB);
}

/* Bad layouts fail the open, naming the key, the value and what is wrong. */
static void test_bad_layouts_refused(void **state)
{
    (void)state;
    const struct {
        const char *preset, *pools, *says[3];
    } cases[] = {
        {"custom", NULL, {"[memory] preset = 'custom' needs a pool list", "[memory] pools"}},
        {"custom", " ", {"needs a pool list"}},
        {"ladder",
         "exclusive",
         {"environment CUBEC_MEMORY_PRESET: [memory] preset = 'ladder' "
          "is not custom, so config environment CUBEC_MEMORY_POOLS: "
          "[memory] pools = 'exclusive' would be ignored"}},
        {NULL, "sliced:page=0", {"[memory] pools = 'sliced:page=0'", "page is zero"}},
        {NULL, "sliced:page=1MiB,max_slice=2MiB", {"max_slice 2097152 is larger than page"}},
        {NULL, "sliced:page=1MiB,cap=512KiB", {"cap 524288 is smaller than one page"}},
        {NULL, "sliced:page=1KiB,cap=1GiB", {"more than 65535"}},
        {NULL, "exclusive;;", {"an empty entry"}},
        {NULL,
         "sliced:page=1TiB",
         {"[memory] pools = 'sliced:page=1TiB'", "larger than the device's page limit"}},
        {"big",
         NULL,
         {"[memory] preset = 'big' is not ladder, exclusive, custom, adaptive or auto"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        set_layout(cases[i].preset, cases[i].pools);
        cubec_device *d = NULL;
        cubec_status st = cubec_device_open(NULL, &d);
        assert_null(d);
        assert_non_null(st);
        assert_int_equal(cubec_status_code(st), CUBEC_INVALID_ARGUMENT);
        for (int k = 0; k < 3 && cases[i].says[k]; k++)
            if (!strstr(cubec_status_message(st), cases[i].says[k]))
                fail_msg("case %zu: '%s' does not say '%s'", i, cubec_status_message(st),
                         cases[i].says[k]);
        cubec_status_free(st);
    }
    /* Too many pools. */
    char many[1024] = "";
    for (int i = 0; i < 30; i++)
        strcat(many, i ? ";exclusive" : "exclusive");
    set_layout(NULL, many);
    cubec_device *d = NULL;
    ASSERT_ERROR(cubec_device_open(NULL, &d), CUBEC_INVALID_ARGUMENT,
                 "too many pools (at most 29)");
    set_layout(NULL, NULL);
}

/* In the ini file, pools lines add up (a line holds at most 198 bytes; a blank one adds
 * nothing); the environment replaces the file's list as a whole. */
static void test_ini_lines_add_up(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof path, "%s/cubec_pools_iniXXXXXX", test_tmp_dir());
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char ini[] = "[memory]\n"
                       "pools =\n"
                       "pools = sliced:page=2MiB,max_slice=256KiB\n"
                       "pools = sliced:page=16MiB,max_slice=4MiB; exclusive:max=64MiB\n";
    assert_int_equal(write(fd, ini, sizeof ini - 1), (ssize_t)(sizeof ini - 1));
    close(fd);
    setenv("CUBEC_CONFIG", path, 1);
    cubec_device *d = test_device_open();
    cubec_stream s;
    ASSERT_OK(cubec_stream_new(d, &s));
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_create(d, s, 100, &b));
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    assert_string_equal(r.preset, "custom");
    assert_int_equal(buffer_pools(&r, "sliced"), 2);
    assert_int_equal(r.pools[0].page_size, 2 * MiB);
    assert_int_equal(r.pools[1].page_size, 16 * MiB);
    assert_string_equal(r.pools[2].kind, "exclusive");
    assert_int_equal(r.pools[2].page_size, 64 * MiB);
    ASSERT_OK(cubec_buffer_release(d, b));
    test_device_close(d);

    setenv("CUBEC_MEMORY_POOLS", "sliced:page=4MiB", 1);
    d = test_device_open();
    ASSERT_OK(cubec_stream_new(d, &s));
    ASSERT_OK(cubec_buffer_create(d, s, 100, &b));
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    assert_int_equal(buffer_pools(&r, "sliced") + buffer_pools(&r, "exclusive"), 1);
    assert_int_equal(r.pools[0].page_size, 4 * MiB);
    ASSERT_OK(cubec_buffer_release(d, b));
    test_device_close(d);
    unsetenv("CUBEC_MEMORY_POOLS");
    unsetenv("CUBEC_CONFIG");
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ladder),
        cmocka_unit_test(test_exclusive),
        cmocka_unit_test(test_custom),
        cmocka_unit_test(test_adaptive),
        cmocka_unit_test(test_bad_layouts_refused),
        cmocka_unit_test(test_ini_lines_add_up),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
