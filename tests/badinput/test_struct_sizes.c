/* Sized structs (cubec.h, "Structs that grow"; docs/api.md): a caller built against an older
 * header declares a smaller struct_size and keeps working, the fields past it taking their
 * defaults (inputs) or left alone (outputs); a struct_size of 0 (the INIT macro forgotten) or one
 * larger than the library knows (a newer header) is refused with CUBEC_INVALID_ARGUMENT naming
 * the argument, the value and the macro, and nothing is written. Also the version query. */
#include "launch_util.h"
#include "test_util.h"
#include "uint_kernels.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { N = 64, JUNK = 0x5a };

typedef struct fixture {
    cubec_device *d;
    cubec_stream s;
    cubec_kernel produce, consume, step;
} fixture;

static int setup(void **state)
{
    static fixture f;
    memset(&f, 0, sizeof f);
    f.d = test_device_open();
    ASSERT_OK(cubec_stream_new(f.d, &f.s));
    uint_kernels_create(f.d, &f.produce, &f.consume, &f.step);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    uint_kernels_destroy(f->d, f->produce, f->consume, f->step);
    test_device_close(f->d);
    return 0;
}

/* Every byte of [p, p + n) is `value`. */
static int all_bytes(const void *p, size_t n, unsigned char value)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i] != value) return 0;
    return 1;
}

/* The refusal of a bad struct_size names the argument, the value and the macro. */
static void expect_size_refused(cubec_status st, const char *arg, uint32_t size, const char *init)
{
    char want[160];
    snprintf(want, sizeof want, "%s->struct_size is %u", arg, size);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", st ? cubec_status_message(st) : "(success)");
    if (!strstr(msg, init)) {
        cubec_status_free(st);
        fail_msg("message \"%s\" does not name %s", msg, init);
    }
    test_assert_error(st, CUBEC_INVALID_ARGUMENT, want, msg, __FILE__, __LINE__);
}

static void test_version(void **state)
{
    (void)state;
    assert_int_equal(cubec_version(), CUBEC_VERSION);
    assert_int_equal(CUBEC_VERSION, (CUBEC_VERSION_MAJOR << 16) | (CUBEC_VERSION_MINOR << 8) |
                                        CUBEC_VERSION_PATCH);
    /* Packed versions compare in order. */
    assert_true(CUBEC_MAKE_VERSION(0, 2, 0) > CUBEC_MAKE_VERSION(0, 1, 255));
    assert_true(CUBEC_MAKE_VERSION(1, 0, 0) > CUBEC_MAKE_VERSION(0, 255, 255));
    assert_true(cubec_version() >= CUBEC_MAKE_VERSION(0, 2, 0));
}

/* An output struct of an older header: the library writes the fields it declared (the same
 * values a whole struct gets) and nothing past them. */
static void test_older_output_structs(void **state)
{
    fixture *f = *state;
    cubec_device_info whole = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(f->d, &whole));
    assert_int_equal(whole.struct_size, sizeof whole);

    /* Built before the capability query: the struct ended at host_register_alignment. */
    const size_t old = offsetof(cubec_device_info, min_subgroup_size);
    cubec_device_info older = CUBEC_DEVICE_INFO_INIT;
    memset(&older, JUNK, sizeof older);
    older.struct_size = (uint32_t)old;
    ASSERT_OK(cubec_device_get_info(f->d, &older));
    assert_int_equal(older.struct_size, old);
    assert_memory_equal((char *)&older + 4, (char *)&whole + 4, old - 4);
    assert_true(all_bytes((char *)&older + old, sizeof older - old, JUNK));

    /* The same with peek. */
    memset(&older, JUNK, sizeof older);
    older.struct_size = (uint32_t)old;
    ASSERT_OK(cubec_device_peek(0, &older));
    assert_true(older.name[0] != 0);
    assert_true(all_bytes((char *)&older + old, sizeof older - old, JUNK));

    /* A memory report that ends before the window fields. */
    tbuf b = make_numbered_buffer(f->d, f->s, NULL, 4096);
    cubec_memory_report r_whole = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(f->d, f->s, &r_whole));
    const size_t r_old = offsetof(cubec_memory_report, window_mode);
    static cubec_memory_report r_older = CUBEC_MEMORY_REPORT_INIT;
    memset(&r_older, JUNK, sizeof r_older);
    r_older.struct_size = (uint32_t)r_old;
    ASSERT_OK(cubec_memory_report_get(f->d, f->s, &r_older));
    assert_true(r_older.bytes_in_use >= 4096);
    assert_int_equal(r_older.bytes_in_use, r_whole.bytes_in_use);
    assert_int_equal(r_older.pool_count, r_whole.pool_count);
    assert_true(all_bytes((char *)&r_older + r_old, sizeof r_older - r_old, JUNK));

    /* A kernel info that ends before the per-binding access. */
    cubec_kernel_info ki_whole = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(f->d, f->consume, &ki_whole));
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    memset(&ki, JUNK, sizeof ki);
    ki.struct_size = (uint32_t)offsetof(cubec_kernel_info, access);
    ASSERT_OK(cubec_kernel_get_info(f->d, f->consume, &ki));
    assert_true(ki.hash == ki_whole.hash && ki.binding_count == 2);
    assert_true(all_bytes(ki.access, sizeof ki - offsetof(cubec_kernel_info, access), JUNK));
    ASSERT_OK(cubec_buffer_release(f->d, b.h));
}

/* Input structs of an older header: the fields past struct_size hold junk that would be refused
 * (or would change the result) if read, and take their defaults instead. */
static void test_older_input_structs(void **state)
{
    fixture *f = *state;
    uint32_t xs[N], want[N];
    for (uint32_t i = 0; i < N; i++)
        xs[i] = i * 7u + 1u;
    cpu_consume(xs, want, N, 3, 5);
    cubec_buffer x, y;
    ASSERT_OK(cubec_buffer_from(f->d, f->s, xs, sizeof xs, &x));
    ASSERT_OK(cubec_buffer_create(f->d, f->s, sizeof xs, &y));

    /* A launch desc of a header before declared_outputs: the junk there names buffers past
     * buffer_count, which a whole desc is refused for. */
    uint32_t meta[3] = {N, 3, 5};
    cubec_buffer bufs[2] = {x, y};
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    memset(&ld, JUNK, sizeof ld);
    ld.struct_size = (uint32_t)offsetof(cubec_launch_desc, declared_outputs);
    ld.kernel = f->consume;
    ld.buffers = bufs;
    ld.buffer_count = 2;
    ld.info = meta;
    ld.info_size = sizeof meta;
    ld.groups[0] = 1;
    ld.groups[1] = 1;
    ld.groups[2] = 1;
    ld.indirect = (cubec_buffer){0};
    ld.indirect_offset = 0;
    ASSERT_OK(cubec_launch(f->d, f->s, &ld));
    uint32_t got[N];
    ASSERT_OK(cubec_read(f->d, f->s, y, 0, got, sizeof got));
    assert_memory_equal(got, want, sizeof got);
    /* A desc of a header before address_buffers: junk there (a made-up pointer, a count past
     * 32) is never read. */
    ld.struct_size = (uint32_t)offsetof(cubec_launch_desc, address_buffers);
    ld.declared_outputs = 0;
    memset(got, 0, sizeof got);
    ASSERT_OK(cubec_launch(f->d, f->s, &ld));
    ASSERT_OK(cubec_read(f->d, f->s, y, 0, got, sizeof got));
    assert_memory_equal(got, want, sizeof got);
    /* The same junk in a whole desc is read, and refused: the address buffers' count first,
     * then, with those members cleared, declared_outputs. */
    ld.struct_size = sizeof ld;
    ASSERT_ERROR(cubec_launch(f->d, f->s, &ld), CUBEC_INVALID_ARGUMENT, "address_buffer_count");
    ld.address_buffers = NULL;
    ld.address_buffer_count = 0;
    ld.address_reads = ld.address_writes = 0;
    memset(&ld.declared_outputs, JUNK, sizeof ld.declared_outputs);
    ASSERT_ERROR(cubec_launch(f->d, f->s, &ld), CUBEC_INVALID_ARGUMENT, "declared_outputs");

    /* A kernel desc of a header before required_subgroup_size: 0x5a5a5a5a there (not a power of
     * two) would be refused. */
    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    memset(&kd, JUNK, sizeof kd);
    kd.struct_size = (uint32_t)offsetof(cubec_kernel_desc, required_subgroup_size);
    kd.name = "older_consume";
    kd.glsl = consume_src;
    kd.spirv = NULL;
    kd.spirv_words = 0;
    kd.defines = NULL;
    kd.define_count = 0;
    kd.entry_point = NULL;
    kd.optimize = 0;
    kd.spec_constants = NULL;
    kd.spec_constant_count = 0;
    cubec_kernel k = {0};
    ASSERT_OK(cubec_kernel_create(f->d, &kd, &k));
    ASSERT_OK(uint_launch(f->d, f->s, k, x, y, N, 3, 5));
    ASSERT_OK(cubec_read(f->d, f->s, y, 0, got, sizeof got));
    assert_memory_equal(got, want, sizeof got);
    ASSERT_OK(cubec_kernel_destroy(f->d, k));
    kd.struct_size = sizeof kd;
    /* The pointers added after it are dereferenced when set: junk there cannot be survived, so
     * they are cleared, and the junk subgroup size is what is refused. */
    kd.glsl_path = NULL;
    kd.include_dirs = NULL;
    kd.include_dir_count = 0;
    kd.preamble = NULL;
    kd.wgsl = NULL;
    ASSERT_ERROR(cubec_kernel_create(f->d, &kd, &k), CUBEC_INVALID_ARGUMENT,
                 "required_subgroup_size");

    /* A device desc that ends before `backend`: junk pointers there are not read, the device
     * opens on the default backend. */
    cubec_device_desc dd = CUBEC_DEVICE_DESC_INIT;
    memset(&dd, JUNK, sizeof dd);
    dd.struct_size = (uint32_t)offsetof(cubec_device_desc, backend);
    dd.select_by_index = 0;
    dd.index = 0;
    dd.name = NULL;
    dd.validation = 1;
    dd.on_validation = NULL;
    dd.on_validation_user = NULL;
    dd.tasks_max = 0;
    cubec_device *d2 = NULL;
    ASSERT_OK(cubec_device_open(&dd, &d2));
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d2, &info));
    cubec_device_close(d2);
    ASSERT_OK(cubec_buffer_release(f->d, x));
    ASSERT_OK(cubec_buffer_release(f->d, y));
}

/* struct_size 0, below 4 and past the library's size: refused, naming the argument, the value
 * and the macro; out-parameters keep every byte, nothing is queued or created. */
static void test_bad_sizes_refused(void **state)
{
    fixture *f = *state;
    const uint32_t bad[] = {0, 2};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0] + 1; i++) {
        const int larger = i == sizeof bad / sizeof bad[0];
#define BAD(type) (larger ? (uint32_t)sizeof(type) + 8u : bad[i])
        cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
        memset(&info, JUNK, sizeof info);
        info.struct_size = BAD(cubec_device_info);
        expect_size_refused(cubec_device_get_info(f->d, &info), "out_info", info.struct_size,
                            "CUBEC_DEVICE_INFO_INIT");
        assert_true(all_bytes(info.name, sizeof info - 4, JUNK));
        expect_size_refused(cubec_device_peek(0, &info), "out_info", info.struct_size,
                            "CUBEC_DEVICE_INFO_INIT");
        assert_true(all_bytes(info.name, sizeof info - 4, JUNK));

        cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
        memset(&ki, JUNK, sizeof ki);
        ki.struct_size = BAD(cubec_kernel_info);
        expect_size_refused(cubec_kernel_get_info(f->d, f->consume, &ki), "out_info",
                            ki.struct_size, "CUBEC_KERNEL_INFO_INIT");
        assert_true(all_bytes((char *)&ki + 4, sizeof ki - 4, JUNK));

        static cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
        memset(&r, JUNK, sizeof r);
        r.struct_size = BAD(cubec_memory_report);
        expect_size_refused(cubec_memory_report_get(f->d, f->s, &r), "out_report", r.struct_size,
                            "CUBEC_MEMORY_REPORT_INIT");
        assert_true(all_bytes((char *)&r + 4, sizeof r - 4, JUNK));

        cubec_vulkan_handles h = CUBEC_VULKAN_HANDLES_INIT;
        memset(&h, JUNK, sizeof h);
        h.struct_size = BAD(cubec_vulkan_handles);
        expect_size_refused(cubec_device_get_vulkan_handles(f->d, &h), "out_handles", h.struct_size,
                            "CUBEC_VULKAN_HANDLES_INIT");
        assert_true(all_bytes((char *)&h + 4, sizeof h - 4, JUNK));

        cubec_buffer x;
        ASSERT_OK(cubec_buffer_create(f->d, f->s, 256, &x));
        cubec_raw_buffer raw = CUBEC_RAW_BUFFER_INIT;
        memset(&raw, JUNK, sizeof raw);
        raw.struct_size = BAD(cubec_raw_buffer);
        cubec_guard guard = {7};
        expect_size_refused(cubec_buffer_raw(f->d, f->s, x, &raw, &guard), "out_raw",
                            raw.struct_size, "CUBEC_RAW_BUFFER_INIT");
        assert_true(all_bytes((char *)&raw + 4, sizeof raw - 4, JUNK));

        /* A refused profile end leaves the profile open: it still ends. */
        cubec_profile p;
        ASSERT_OK(cubec_profile_begin(f->d, f->s, &p));
        cubec_profile_result pr = CUBEC_PROFILE_RESULT_INIT;
        memset(&pr, JUNK, sizeof pr);
        pr.struct_size = BAD(cubec_profile_result);
        expect_size_refused(cubec_profile_end(f->d, f->s, p, &pr), "out_result", pr.struct_size,
                            "CUBEC_PROFILE_RESULT_INIT");
        assert_true(all_bytes((char *)&pr + 4, sizeof pr - 4, JUNK));
        cubec_profile_result ok = CUBEC_PROFILE_RESULT_INIT;
        ASSERT_OK(cubec_profile_end(f->d, f->s, p, &ok));

        /* Inputs: nothing launched (y keeps its bytes), nothing created or opened. */
        uint32_t zeros[N] = {0};
        cubec_buffer y;
        ASSERT_OK(cubec_buffer_from(f->d, f->s, zeros, sizeof zeros, &y));
        uint32_t info3[3] = {N, 3, 5};
        cubec_buffer bufs[2] = {x, y};
        cubec_launch_desc ld = {.struct_size = BAD(cubec_launch_desc),
                                .kernel = f->consume,
                                .buffers = bufs,
                                .buffer_count = 2,
                                .info = info3,
                                .info_size = sizeof info3,
                                .groups = {1, 1, 1}};
        expect_size_refused(cubec_launch(f->d, f->s, &ld), "desc", ld.struct_size,
                            "CUBEC_LAUNCH_DESC_INIT");
        uint32_t got[N];
        ASSERT_OK(cubec_read(f->d, f->s, y, 0, got, sizeof got));
        assert_memory_equal(got, zeros, sizeof got);

        cubec_kernel_desc kd = {
            .struct_size = BAD(cubec_kernel_desc), .name = "sized", .glsl = consume_src};
        cubec_kernel k = {77};
        expect_size_refused(cubec_kernel_create(f->d, &kd, &k), "desc", kd.struct_size,
                            "CUBEC_KERNEL_DESC_INIT");
        assert_true(k.id == 0);
        expect_size_refused(cubec_kernel_queue(f->d, &kd, &k), "desc", kd.struct_size,
                            "CUBEC_KERNEL_DESC_INIT");
        assert_true(k.id == 0);

        cubec_device_desc dd = {.struct_size = BAD(cubec_device_desc), .validation = 1};
        cubec_device *d2 = (cubec_device *)&dd;
        expect_size_refused(cubec_device_open(&dd, &d2), "desc", dd.struct_size,
                            "CUBEC_DEVICE_DESC_INIT");
        assert_null(d2);

        cubec_tuner_desc td = {.struct_size = BAD(cubec_tuner_desc), .name = "sized"};
        cubec_tuner *t = (cubec_tuner *)&td;
        expect_size_refused(cubec_tuner_create(f->d, &td, &t), "desc", td.struct_size,
                            "CUBEC_TUNER_DESC_INIT");
        assert_null(t);
        cubec_tuner_desc td_ok = CUBEC_TUNER_DESC_INIT;
        td_ok.name = "sized";
        td_ok.memory_only = 1;
        ASSERT_OK(cubec_tuner_create(f->d, &td_ok, &t));
        cubec_tune_result tr = CUBEC_TUNE_RESULT_INIT;
        memset(&tr, JUNK, sizeof tr);
        tr.struct_size = BAD(cubec_tune_result);
        cubec_tune_request req = CUBEC_TUNE_REQUEST_INIT;
        req.key = "k";
        expect_size_refused(cubec_tune_choose(t, f->s, &req, &tr), "out_result", tr.struct_size,
                            "CUBEC_TUNE_RESULT_INIT");
        assert_true(all_bytes((char *)&tr + 4, sizeof tr - 4, JUNK));
        tr.struct_size = sizeof tr;
        req.struct_size = BAD(cubec_tune_request);
        expect_size_refused(cubec_tune_choose(t, f->s, &req, &tr), "request", req.struct_size,
                            "CUBEC_TUNE_REQUEST_INIT");
        assert_true(all_bytes((char *)&tr + 4, sizeof tr - 4, JUNK));
        cubec_tune_outcome to = CUBEC_TUNE_OUTCOME_INIT;
        memset(&to, JUNK, sizeof to);
        to.struct_size = BAD(cubec_tune_outcome);
        expect_size_refused(cubec_tune_outcome_get(t, 0, &to), "out_outcome", to.struct_size,
                            "CUBEC_TUNE_OUTCOME_INIT");
        assert_true(all_bytes((char *)&to + 4, sizeof to - 4, JUNK));
        ASSERT_OK(cubec_tuner_destroy(t));
#undef BAD
        ASSERT_OK(cubec_buffer_release(f->d, x));
        ASSERT_OK(cubec_buffer_release(f->d, y));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_older_output_structs),
        cmocka_unit_test(test_older_input_structs),
        cmocka_unit_test(test_bad_sizes_refused),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
