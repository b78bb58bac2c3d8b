/* The NCCL transport of collectives (src/interop/nccl_collectives.c) and NCCL's loader
 * (src/interop/nccl_driver.c).
 *
 * Everywhere: where NCCL is installed, it loads once per process; a missing library, one lacking an
 * entry point and one too old are refused by name (stand-ins built from tests/interop/fake_nccl.c);
 * bad arguments to nccl_group_open, two ranks on one GPU (two opens of one device: NCCL's duplicate
 * GPU) among them, are refused naming the reason before NCCL is looked for; where NCCL is absent
 * (ctest test_nccl_collectives_absent makes it so) the open names the library, and where CUDA is
 * absent (or the device is not a CUDA device) the open through a stand-in NCCL names that.
 *
 * Where libnccl.so.2 and libcuda.so.1 load and the device is an NVIDIA GPU (one GPU: n = 1):
 * every collective x dtype (f32, f16, i32) x op x size, through NCCL's own calls and through the
 * per-shard calls taken for totals not divisible by n (forced), against a CPU reference, with
 * the elements past the result checked untouched; a collective whose input a slow cubec kernel
 * writes just before must see that kernel's values (the CUDA stream waits for cubec's), and a
 * cubec_read queued right after it must see NCCL's result (cubec waits for CUDA, on the GPU);
 * refusals of arguments with a real group; an output carrying an old failure holds NCCL's result
 * after (the server knows NCCL wrote it). Elsewhere those tests report themselves skipped, by
 * name.
 *
 * Everywhere again: how each collective becomes NCCL calls, for n = 1 to 4 and totals divisible
 * by n or not, through a host stand-in of NCCL's semantics (test_collectives_as_nccl_calls). */
#include "interop/cuda_driver.h"
#include "interop/nccl_collectives.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { DTYPE_F16 = 2, SENTINEL_ELEMS = 16 };

static void test_missing_library_is_named(void **state)
{
    (void)state;
    nccl_driver nc;
    ASSERT_ERROR(nccl_driver_load("/nonexistent/libnccl.so.2", &nc), CUBEC_UNSUPPORTED,
                 "cannot load /nonexistent/libnccl.so.2");
    assert_null(nc.get_version);
}

static void test_missing_entry_point_is_named(void **state)
{
    (void)state;
    nccl_driver nc;
    ASSERT_ERROR(nccl_driver_load(FAKE_NCCL_PARTIAL, &nc), CUBEC_UNSUPPORTED,
                 "has no ncclCommInitAll");
    assert_null(nc.get_version); /* nothing half-loaded is left behind */
}

static void test_old_version_is_refused(void **state)
{
    (void)state;
    nccl_driver nc;
    ASSERT_ERROR(nccl_driver_load(FAKE_NCCL_OLD, &nc), CUBEC_UNSUPPORTED,
                 "is version code 2307 (ncclGetVersion returned 0): cubec needs NCCL 2.4");
    assert_null(nc.all_reduce);
}

static void test_stand_in_loads(void **state)
{
    (void)state;
    nccl_driver nc;
    ASSERT_OK(nccl_driver_load(FAKE_NCCL_FULL, &nc));
    assert_int_equal(nc.version, 22803);
    assert_non_null(nc.reduce_scatter);
    ASSERT_ERROR(nccl_status(&nc, 5, "ncclAllReduce"), CUBEC_INTERNAL,
                 "ncclAllReduce: NCCL error 5 (stand-in error)");
}

/* The library nccl_driver_get loads: $CUBEC_NCCL_LIBRARY or libnccl.so.2. */
static const char *nccl_library(void)
{
    const char *path = getenv("CUBEC_NCCL_LIBRARY");
    return path && path[0] ? path : "libnccl.so.2";
}

/* Where NCCL is installed, the process's table is the real library's, loaded once. */
static void test_real_library_loads(void **state)
{
    (void)state;
    nccl_driver probe;
    cubec_status st = nccl_driver_load(nccl_library(), &probe);
    if (st) {
        print_message("test_real_library_loads skipped: %s\n", cubec_status_message(st));
        cubec_status_free(st);
        skip();
    }
    const nccl_driver *a = NULL, *b = NULL;
    ASSERT_OK(nccl_driver_get(&a));
    ASSERT_OK(nccl_driver_get(&b));
    assert_ptr_equal(a, b);
    int version = 0;
    assert_int_equal(a->get_version(&version), 0);
    assert_int_equal(version, probe.version);
    assert_true(version >= NCCL_OLDEST_VERSION);
    print_message("NCCL version code %d\n", version);
    const char *text = a->get_error_string(4);
    assert_non_null(text);
    assert_true(strlen(text) > 0);
}

static void test_open_refusals(void **state)
{
    (void)state;
    cubec_device *a = test_device_open();
    cubec_device *b = test_device_open(); /* another open of the same GPU */
    nccl_group *g = (nccl_group *)(uintptr_t)1;
    cubec_device *devs[2] = {a, b};
    ASSERT_ERROR(nccl_group_open(devs, 2, NULL), CUBEC_INVALID_ARGUMENT, "out is NULL");
    ASSERT_ERROR(nccl_group_open(NULL, 1, &g), CUBEC_INVALID_ARGUMENT, "devices is NULL");
    assert_null(g);
    ASSERT_ERROR(nccl_group_open(devs, 0, &g), CUBEC_INVALID_ARGUMENT, "n is 0");
    ASSERT_ERROR(nccl_group_open(devs, 5000, &g), CUBEC_INVALID_ARGUMENT, "n is 5000");
    cubec_device *with_null[2] = {a, NULL};
    ASSERT_ERROR(nccl_group_open(with_null, 2, &g), CUBEC_INVALID_ARGUMENT, "devices[1]");
    cubec_device *twice[2] = {a, a};
    ASSERT_ERROR(nccl_group_open(twice, 2, &g), CUBEC_INVALID_ARGUMENT, "devices[1] is devices[0]");
    /* NCCL refuses two ranks on one GPU; the group says so before NCCL is loaded. */
    ASSERT_ERROR(nccl_group_open(devs, 2, &g), CUBEC_UNSUPPORTED,
                 "devices[0] and devices[1] are the same GPU");
    ASSERT_ERROR(nccl_group_open(devs, 2, &g), CUBEC_UNSUPPORTED, "duplicate GPU");
    assert_null(g);
    test_device_close(b);
    test_device_close(a);
}

static void test_without_nccl_refused(void **state)
{
    (void)state;
    nccl_driver probe;
    cubec_status st = nccl_driver_load(nccl_library(), &probe);
    if (!st) {
        print_message("test_without_nccl_refused skipped: %s loads\n", nccl_library());
        skip();
    }
    cubec_status_free(st);
    cubec_device *d = test_device_open();
    nccl_group *g = NULL;
    char needle[256];
    snprintf(needle, sizeof needle, "nccl_group_open: NCCL: cannot load %s", nccl_library());
    ASSERT_ERROR(nccl_group_open(&d, 1, &g), CUBEC_UNSUPPORTED, needle);
    assert_null(g);
    test_device_close(d);
}

/* With NCCL loaded (a stand-in), a device CUDA cannot reach is refused: by libcuda's absence
 * here, or, where libcuda loads, because no CUDA device has its UUID. */
static void test_without_cuda_device_refused(void **state)
{
    (void)state;
    nccl_driver nc;
    ASSERT_OK(nccl_driver_load(FAKE_NCCL_FULL, &nc));
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    cuda_driver probe;
    cubec_status st = cuda_driver_load("libcuda.so.1", &probe);
    nccl_group *g = NULL;
    if (st) {
        cubec_status_free(st);
        ASSERT_ERROR(nccl_group_open_with(&nc, &d, 1, &g), CUBEC_UNSUPPORTED,
                     "nccl_group_open: CUDA interop: cannot load libcuda.so.1");
    } else if (info.vendor_id != 0x10de) {
        ASSERT_ERROR(nccl_group_open_with(&nc, &d, 1, &g), CUBEC_UNSUPPORTED,
                     "is not a CUDA device");
    } else {
        print_message("test_without_cuda_device_refused skipped: %s is a CUDA device\n", info.name);
        test_device_close(d);
        skip();
    }
    assert_null(g);
    test_device_close(d);
}

/* ---- On a GPU with NCCL and CUDA ------------------------------------------------------------ */

/* The device and a one-rank group, or NULL after printing why the named test is skipped. */
static cubec_device *gpu_group(const char *test, nccl_group **g)
{
    *g = NULL;
    nccl_driver nc;
    cuda_driver cu;
    cubec_status st = nccl_driver_load(nccl_library(), &nc);
    if (!st) st = cuda_driver_load("libcuda.so.1", &cu);
    if (st) {
        print_message("%s skipped: %s\n", test, cubec_status_message(st));
        cubec_status_free(st);
        return NULL;
    }
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    if (info.vendor_id != 0x10de || !(info.external_handles & CUBEC_EXTERNAL_TIMELINE_FD)) {
        print_message("%s skipped: %s is not an NVIDIA GPU with an exportable timeline\n", test,
                      info.name);
        test_device_close(d);
        return NULL;
    }
    ASSERT_OK(nccl_group_open(&d, 1, g));
    return d;
}

/* IEEE binary16 of small integers and halves (exact both ways): what the tests feed f16. */
static uint16_t to_half(float f)
{
    if (f == 0.0f) return 0;
    uint32_t sign = f < 0 ? 0x8000u : 0;
    float a = fabsf(f);
    int e = 0;
    float m = frexpf(a, &e); /* a = m * 2^e, m in [0.5, 1) */
    uint32_t exp = (uint32_t)(e - 1 + 15);
    uint32_t frac = (uint32_t)lrintf((m * 2.0f - 1.0f) * 1024.0f);
    return (uint16_t)(sign | exp << 10 | frac);
}

static float from_half(uint16_t h)
{
    if ((h & 0x7fffu) == 0) return 0.0f;
    float m = 1.0f + (float)(h & 0x3ffu) / 1024.0f;
    float v = ldexpf(m, (int)((h >> 10) & 0x1fu) - 15);
    return h & 0x8000u ? -v : v;
}

/* Element i of the test's input as the bytes of `dtype`: small integers, so every sum is exact
 * in each type whatever NCCL's order. */
static void put(void *data, int dtype, uint64_t i, int32_t v)
{
    if (dtype == CUBEC_DTYPE_F32)
        ((float *)data)[i] = (float)v;
    else if (dtype == CUBEC_DTYPE_I32)
        ((int32_t *)data)[i] = v;
    else
        ((uint16_t *)data)[i] = to_half((float)v);
}

static double get(const void *data, int dtype, uint64_t i)
{
    if (dtype == CUBEC_DTYPE_F32) return ((const float *)data)[i];
    if (dtype == CUBEC_DTYPE_I32) return ((const int32_t *)data)[i];
    return from_half(((const uint16_t *)data)[i]);
}

static uint32_t esize(int dtype)
{
    return dtype == DTYPE_F16 ? 2 : 4;
}

static int32_t input_value(uint64_t i, int salt)
{
    return (int32_t)((i * 37u + (uint64_t)salt * 11u) % 1001u) - 500;
}

static cubec_buffer filled(cubec_device *d, int dtype, uint64_t elems, int salt)
{
    uint64_t bytes = elems * esize(dtype);
    void *host = malloc(bytes ? bytes : 1);
    assert_non_null(host);
    for (uint64_t i = 0; i < elems; i++)
        put(host, dtype, i, input_value(i, salt));
    cubec_buffer b = {0};
    ASSERT_OK(cubec_buffer_create_exportable(d, 0, bytes, &b));
    ASSERT_OK(cubec_write(d, 0, b, 0, host, bytes));
    free(host);
    return b;
}

/* buffer[0, want_elems) holds `expected`'s values and the rest of it still its fill (salt). */
static void check(cubec_device *d, cubec_buffer b, int dtype, uint64_t elems,
                  const double *expected, uint64_t want_elems, int salt, const char *what)
{
    uint64_t bytes = elems * esize(dtype);
    void *got = malloc(bytes ? bytes : 1);
    assert_non_null(got);
    ASSERT_OK(cubec_read(d, 0, b, 0, got, bytes));
    for (uint64_t i = 0; i < elems; i++) {
        double want = i < want_elems ? expected[i] : (double)input_value(i, salt);
        double have = get(got, dtype, i);
        if (have != want)
            fail_msg("%s (dtype %d, %llu elements): element %llu is %g, want %g%s", what, dtype,
                     (unsigned long long)elems, (unsigned long long)i, have, want,
                     i < want_elems ? "" : " (past the result: must be untouched)");
    }
    free(got);
}

static void test_one_rank_every_collective(void **state)
{
    (void)state;
    nccl_group *g = NULL;
    cubec_device *d = gpu_group("test_one_rank_every_collective", &g);
    if (!d) skip();
    static const int dtypes[] = {CUBEC_DTYPE_F32, DTYPE_F16, CUBEC_DTYPE_I32};
    static const uint64_t sizes[] = {1, 1000, (1u << 20) + 3};
    const cubec_stream s = 0;
    for (int per_shard = 0; per_shard < 2; per_shard++) {
        nccl_group_force_per_shard(g, per_shard);
        for (size_t t = 0; t < 3; t++)
            for (size_t z = 0; z < 3; z++) {
                const int dt = dtypes[t];
                const uint64_t n = sizes[z], big = n + SENTINEL_ELEMS;
                double *want = malloc(n * sizeof *want);
                assert_non_null(want);
                for (uint64_t i = 0; i < n; i++)
                    want[i] = input_value(i, 1); /* one rank: every result is its own input */

                /* all-reduce (sum, max) and broadcast, in place on a larger buffer. */
                for (int op = CUBEC_REDUCE_SUM; op <= CUBEC_REDUCE_MAX; op++) {
                    cubec_buffer b = filled(d, dt, big, 1);
                    ASSERT_OK(
                        nccl_group_all_reduce(g, &b, &s, n, (cubec_dtype)dt, (cubec_reduce_op)op));
                    check(d, b, dt, big, want, n, 1, "all_reduce");
                    ASSERT_OK(cubec_buffer_release(d, b));
                }
                cubec_buffer b = filled(d, dt, big, 1);
                ASSERT_OK(nccl_group_broadcast(g, &b, &s, n, (cubec_dtype)dt, 0));
                check(d, b, dt, big, want, n, 1, "broadcast");
                ASSERT_OK(cubec_buffer_release(d, b));

                /* all-gather and reduce-scatter: out (salt 2) gets in (salt 1), no more. */
                for (int op = 0; op <= CUBEC_REDUCE_MAX; op++) {
                    cubec_buffer in = filled(d, dt, n, 1), out = filled(d, dt, big, 2);
                    if (op == 0)
                        ASSERT_OK(nccl_group_all_gather(g, &in, &out, &s, n, (cubec_dtype)dt));
                    else
                        ASSERT_OK(nccl_group_reduce_scatter(g, &in, &out, &s, n, (cubec_dtype)dt,
                                                            (cubec_reduce_op)op));
                    check(d, out, dt, big, want, n, 2, op ? "reduce_scatter" : "all_gather");
                    ASSERT_OK(cubec_buffer_release(d, in));
                    ASSERT_OK(cubec_buffer_release(d, out));
                }
                free(want);
            }
    }
    nccl_group_close(g);
    test_device_close(d);
}

/* a[i] = i * 7 + 3 after a data-dependent spin, so the launch takes a while. */
static const char spin_src[] = "#version 450\n"
                               "layout(local_size_x = 64) in;\n"
                               "layout(std430, binding = 0) writeonly buffer A { uint a[]; };\n"
                               "CUBEC_INFO(uint n; uint spins;)\n"
                               "void main() {\n"
                               "  uint i = gl_GlobalInvocationID.x;\n"
                               "  if (i >= info.n) return;\n"
                               "  uint x = i;\n"
                               "  for (uint k = 0u; k < info.spins; k++) x = x * 1664525u + 1u;\n"
                               "  a[i] = i * 7u + 3u + (x == 0u && i == 0xffffffffu ? 1u : 0u);\n"
                               "}\n";

static void test_waits_for_cubec_writer(void **state)
{
    (void)state;
    nccl_group *g = NULL;
    cubec_device *d = gpu_group("test_waits_for_cubec_writer", &g);
    if (!d) skip();
    enum { N = 1 << 16 };
    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    kd.name = "spin";
    kd.glsl = spin_src;
    cubec_kernel k = {0};
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    cubec_buffer in = {0}, out = {0};
    ASSERT_OK(cubec_buffer_create_exportable(d, 0, N * 4, &in));
    ASSERT_OK(cubec_buffer_create_exportable(d, 0, N * 4, &out));
    const cubec_stream s = 0;
    uint32_t *got = malloc(N * 4);
    assert_non_null(got);
    for (uint32_t round = 0; round < 3; round++) {
        ASSERT_OK(cubec_fill(d, 0, in, 0, N * 4, 0));
        ASSERT_OK(cubec_fill(d, 0, out, 0, N * 4, 0));
        ASSERT_OK(cubec_sync(d, 0));
        struct {
            uint32_t n, spins;
        } params = {N, 20000u + round};
        cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
        ld.kernel = k;
        ld.buffers = &in;
        ld.buffer_count = 1;
        ld.info = &params;
        ld.info_size = sizeof params;
        ld.groups[0] = N / 64;
        ld.groups[1] = ld.groups[2] = 1;
        ASSERT_OK(cubec_launch(d, 0, &ld));
        /* Queued right after the launch: NCCL must read what the kernel writes, not zeros. */
        ASSERT_OK(nccl_group_all_gather(g, &in, &out, &s, N, CUBEC_DTYPE_I32));
        ASSERT_OK(cubec_read(d, 0, out, 0, got, N * 4));
        for (uint32_t i = 0; i < N; i++)
            if (got[i] != i * 7u + 3u)
                fail_msg("round %u: out[%u] = %u, want %u (NCCL read before cubec wrote?)", round,
                         i, got[i], i * 7u + 3u);
    }
    free(got);
    ASSERT_OK(cubec_kernel_destroy(d, k));
    ASSERT_OK(cubec_buffer_release(d, in));
    ASSERT_OK(cubec_buffer_release(d, out));
    nccl_group_close(g);
    test_device_close(d);
}

static void test_collective_refusals(void **state)
{
    (void)state;
    nccl_group *g = NULL;
    cubec_device *d = gpu_group("test_collective_refusals", &g);
    if (!d) skip();
    const cubec_stream s = 0;
    cubec_buffer b = filled(d, CUBEC_DTYPE_F32, 64, 1), other = filled(d, CUBEC_DTYPE_F32, 64, 2);
    cubec_buffer plain = {0};
    ASSERT_OK(cubec_buffer_create(d, 0, 256, &plain));
    ASSERT_ERROR(nccl_group_all_reduce(g, &b, &s, 64, (cubec_dtype)7, CUBEC_REDUCE_SUM),
                 CUBEC_INVALID_ARGUMENT, "dtype 7");
    ASSERT_ERROR(nccl_group_all_reduce(g, &b, &s, 64, CUBEC_DTYPE_F32, (cubec_reduce_op)9),
                 CUBEC_INVALID_ARGUMENT, "op 9");
    ASSERT_ERROR(nccl_group_broadcast(g, &b, &s, 64, CUBEC_DTYPE_F32, 1), CUBEC_INVALID_ARGUMENT,
                 "root 1 is not a rank");
    ASSERT_ERROR(nccl_group_all_reduce(g, &b, &s, 65, CUBEC_DTYPE_F32, CUBEC_REDUCE_SUM),
                 CUBEC_INVALID_ARGUMENT, "buffers[0] holds 256 bytes, fewer than the 65");
    ASSERT_ERROR(nccl_group_all_gather(g, &b, &b, &s, 64, CUBEC_DTYPE_F32), CUBEC_INVALID_ARGUMENT,
                 "in and out are one array");
    cubec_buffer same = b;
    ASSERT_ERROR(nccl_group_reduce_scatter(g, &b, &same, &s, 64, CUBEC_DTYPE_F32, CUBEC_REDUCE_SUM),
                 CUBEC_INVALID_ARGUMENT, "in[0] and out[0] are one buffer");
    const cubec_stream bad = 12345;
    ASSERT_ERROR(nccl_group_all_reduce(g, &b, &bad, 64, CUBEC_DTYPE_F32, CUBEC_REDUCE_SUM),
                 CUBEC_INVALID_ARGUMENT, "streams[0]");
    ASSERT_ERROR(nccl_group_all_reduce(g, &plain, &s, 64, CUBEC_DTYPE_F32, CUBEC_REDUCE_SUM),
                 CUBEC_INVALID_ARGUMENT, "buffers[0]");
    ASSERT_ERROR(nccl_group_all_gather(g, &b, &plain, &s, 64, CUBEC_DTYPE_F32),
                 CUBEC_INVALID_ARGUMENT, "exportable");
    /* Nothing was changed by the refusals. */
    double want[64];
    for (int i = 0; i < 64; i++)
        want[i] = input_value((uint64_t)i, 1);
    check(d, b, CUBEC_DTYPE_F32, 64, want, 64, 1, "refused calls");
    ASSERT_OK(cubec_buffer_release(d, b));
    ASSERT_OK(cubec_buffer_release(d, other));
    ASSERT_OK(cubec_buffer_release(d, plain));
    nccl_group_close(g);
    test_device_close(d);
}

/* A failure carried by an input reaches the outputs instead of NCCL moving the bytes. */
static void test_input_failure_reaches_outputs(void **state)
{
    (void)state;
    nccl_group *g = NULL;
    cubec_device *d = gpu_group("test_input_failure_reaches_outputs", &g);
    if (!d) skip();
    const cubec_stream s = 0;
    cubec_buffer in = filled(d, CUBEC_DTYPE_F32, 256, 1), out = filled(d, CUBEC_DTYPE_F32, 256, 2);
    ASSERT_OK(cubec_write_failure(d, s, in, 16, 32, CUBEC_INTERNAL, "a producer failed"));
    ASSERT_OK(nccl_group_all_gather(g, &in, &out, &s, 256, CUBEC_DTYPE_F32));
    float got[256];
    ASSERT_ERROR(cubec_read(d, s, out, 0, got, sizeof got), CUBEC_INTERNAL,
                 "rank 0's input carries a failure");
    ASSERT_ERROR(cubec_read(d, s, out, 0, got, sizeof got), CUBEC_INTERNAL, "a producer failed");
    /* Only the failing collective: a clean input goes through NCCL as before. */
    cubec_buffer clean = filled(d, CUBEC_DTYPE_F32, 256, 3),
                 fresh = filled(d, CUBEC_DTYPE_F32, 256, 2);
    ASSERT_OK(nccl_group_all_gather(g, &clean, &fresh, &s, 256, CUBEC_DTYPE_F32));
    double want[256];
    for (int i = 0; i < 256; i++)
        want[i] = input_value((uint64_t)i, 3);
    check(d, fresh, CUBEC_DTYPE_F32, 256, want, 256, 2, "all_gather after a carried failure");
    ASSERT_OK(cubec_buffer_release(d, fresh));
    ASSERT_OK(cubec_buffer_release(d, in));
    ASSERT_OK(cubec_buffer_release(d, out));
    ASSERT_OK(cubec_buffer_release(d, clean));
    nccl_group_close(g);
    test_device_close(d);
}

/* An output that carried a failure before the collective holds NCCL's result after it, and a
 * read says so: NCCL's writes are made known to the server (api_peer_external_landed) as a
 * cuda-interop copy's are. Without that step the read returned the old failure. */
static void test_old_output_failure_cleared(void **state)
{
    (void)state;
    nccl_group *g = NULL;
    cubec_device *d = gpu_group("test_old_output_failure_cleared", &g);
    if (!d) skip();
    const cubec_stream s = 0;
    cubec_buffer in = filled(d, CUBEC_DTYPE_F32, 256, 3), out = filled(d, CUBEC_DTYPE_F32, 256, 2);
    ASSERT_OK(cubec_write_failure(d, s, out, 0, 256 * 4, CUBEC_INTERNAL, "an old failure"));
    ASSERT_OK(nccl_group_all_gather(g, &in, &out, &s, 256, CUBEC_DTYPE_F32));
    double want[256];
    for (int i = 0; i < 256; i++)
        want[i] = input_value((uint64_t)i, 3);
    check(d, out, CUBEC_DTYPE_F32, 256, want, 256, 2, "all_gather over an old failure");
    ASSERT_OK(cubec_sync_check(d, s, &out, 1));
    ASSERT_OK(cubec_buffer_release(d, in));
    ASSERT_OK(cubec_buffer_release(d, out));
    nccl_group_close(g);
    test_device_close(d);
}

static void test_shard_rule(void **state)
{
    (void)state;
    /* cubec_mpi_shard's rule: rank r holds total / n, one more when r < total % n. */
    static const uint64_t totals[] = {0, 1, 2, 7, 1000, 1001};
    for (uint32_t n = 1; n <= 5; n++)
        for (size_t t = 0; t < sizeof totals / sizeof totals[0]; t++) {
            uint64_t next = 0;
            for (uint32_t r = 0; r < n; r++) {
                uint64_t off = 0, cnt = 0;
                nccl_shard(n, totals[t], r, &off, &cnt);
                assert_int_equal(off, next);
                assert_int_equal(cnt, totals[t] / n + (r < totals[t] % n ? 1 : 0));
                next += cnt;
            }
            assert_int_equal(next, totals[t]);
        }
}

/* ---- How collectives become NCCL calls, on a host stand-in for NCCL ------------------------- */

/* The stand-in records each rank's calls between ncclGroupStart and ncclGroupEnd and carries
 * them out at ncclGroupEnd with NCCL's documented semantics, on host memory: the j-th call of
 * every rank is one collective (NCCL's rule for calls of one group), and each must agree on
 * kind, count, dtype, op and root. So the split of uneven shards into grouped broadcasts and
 * reductions is checked for n > 1, which a one-GPU machine cannot run. */
enum { SIM_RANKS = 4, SIM_CALLS = 16 };
enum sim_kind { SIM_ALL_REDUCE, SIM_BROADCAST, SIM_REDUCE, SIM_ALL_GATHER, SIM_REDUCE_SCATTER };

typedef struct sim_call {
    enum sim_kind kind;
    const char *send;
    char *recv;
    size_t count;
    int dtype, op, root;
} sim_call;

static struct {
    int depth, outside_group, mismatches;
    uint32_t calls[SIM_RANKS];
    sim_call call[SIM_RANKS][SIM_CALLS];
} sim;

static uint32_t sim_rank(nccl_comm comm)
{
    uintptr_t r = (uintptr_t)comm - 1;
    assert_true(r < SIM_RANKS);
    return (uint32_t)r;
}

static nccl_result sim_record(sim_call c, nccl_comm comm)
{
    if (sim.depth == 0) sim.outside_group++;
    uint32_t r = sim_rank(comm);
    assert_true(sim.calls[r] < SIM_CALLS);
    sim.call[r][sim.calls[r]++] = c;
    return 0;
}

static double sim_load(const char *p, int nccl_type, size_t i)
{
    if (nccl_type == NCCL_FLOAT32) return ((const float *)(const void *)p)[i];
    if (nccl_type == NCCL_INT32) return ((const int32_t *)(const void *)p)[i];
    return from_half(((const uint16_t *)(const void *)p)[i]);
}

static void sim_store(char *p, int nccl_type, size_t i, double v)
{
    if (nccl_type == NCCL_FLOAT32)
        ((float *)(void *)p)[i] = (float)v;
    else if (nccl_type == NCCL_INT32)
        ((int32_t *)(void *)p)[i] = (int32_t)v;
    else
        ((uint16_t *)(void *)p)[i] = to_half((float)v);
}

static double sim_fold(double a, double b, int op)
{
    return op == NCCL_SUM ? a + b : (a > b ? a : b);
}

/* The j-th collective of the group over `n` ranks, results computed before any is stored. */
static void sim_run(uint32_t n, uint32_t j)
{
    const sim_call *c0 = &sim.call[0][j];
    for (uint32_t r = 1; r < n; r++) {
        const sim_call *c = &sim.call[r][j];
        if (c->kind != c0->kind || c->count != c0->count || c->dtype != c0->dtype ||
            c->op != c0->op || c->root != c0->root)
            sim.mismatches++;
    }
    const size_t count = c0->count;
    const int t = c0->dtype;
    size_t elems = c0->kind == SIM_ALL_GATHER || c0->kind == SIM_REDUCE_SCATTER ? count * n : count;
    double *tmp = calloc(elems ? elems : 1, sizeof *tmp);
    assert_non_null(tmp);
    switch (c0->kind) {
    case SIM_ALL_REDUCE:
    case SIM_REDUCE:
        for (size_t i = 0; i < count; i++) {
            tmp[i] = sim_load(sim.call[0][j].send, t, i);
            for (uint32_t r = 1; r < n; r++)
                tmp[i] = sim_fold(tmp[i], sim_load(sim.call[r][j].send, t, i), c0->op);
        }
        for (uint32_t r = 0; r < n; r++)
            if (c0->kind == SIM_ALL_REDUCE || (int)r == c0->root)
                for (size_t i = 0; i < count; i++)
                    sim_store(sim.call[r][j].recv, t, i, tmp[i]);
        break;
    case SIM_BROADCAST:
        for (size_t i = 0; i < count; i++)
            tmp[i] = sim_load(sim.call[c0->root][j].send, t, i);
        for (uint32_t r = 0; r < n; r++)
            for (size_t i = 0; i < count; i++)
                sim_store(sim.call[r][j].recv, t, i, tmp[i]);
        break;
    case SIM_ALL_GATHER:
        for (uint32_t k = 0; k < n; k++)
            for (size_t i = 0; i < count; i++)
                tmp[k * count + i] = sim_load(sim.call[k][j].send, t, i);
        for (uint32_t r = 0; r < n; r++)
            for (size_t i = 0; i < elems; i++)
                sim_store(sim.call[r][j].recv, t, i, tmp[i]);
        break;
    case SIM_REDUCE_SCATTER:
        for (uint32_t r = 0; r < n; r++)
            for (size_t i = 0; i < count; i++) {
                double v = sim_load(sim.call[0][j].send, t, r * count + i);
                for (uint32_t k = 1; k < n; k++)
                    v = sim_fold(v, sim_load(sim.call[k][j].send, t, r * count + i), c0->op);
                tmp[r * count + i] = v;
            }
        for (uint32_t r = 0; r < n; r++)
            for (size_t i = 0; i < count; i++)
                sim_store(sim.call[r][j].recv, t, i, tmp[r * count + i]);
        break;
    }
    free(tmp);
}

static uint32_t sim_n; /* the ranks of the group under test */

static nccl_result sim_group_start(void)
{
    sim.depth++;
    return 0;
}

static nccl_result sim_group_end(void)
{
    if (--sim.depth > 0) return 0;
    for (uint32_t r = 1; r < sim_n; r++)
        if (sim.calls[r] != sim.calls[0]) sim.mismatches++;
    if (!sim.mismatches)
        for (uint32_t j = 0; j < sim.calls[0]; j++)
            sim_run(sim_n, j);
    memset(sim.calls, 0, sizeof sim.calls);
    return 0;
}

static nccl_result sim_all_reduce(const void *send, void *recv, size_t count, int dtype, int op,
                                  nccl_comm comm, nccl_stream stream)
{
    (void)stream;
    return sim_record((sim_call){SIM_ALL_REDUCE, send, recv, count, dtype, op, 0}, comm);
}

static nccl_result sim_broadcast(const void *send, void *recv, size_t count, int dtype, int root,
                                 nccl_comm comm, nccl_stream stream)
{
    (void)stream;
    return sim_record((sim_call){SIM_BROADCAST, send, recv, count, dtype, 0, root}, comm);
}

static nccl_result sim_reduce(const void *send, void *recv, size_t count, int dtype, int op,
                              int root, nccl_comm comm, nccl_stream stream)
{
    (void)stream;
    return sim_record((sim_call){SIM_REDUCE, send, recv, count, dtype, op, root}, comm);
}

static nccl_result sim_all_gather(const void *send, void *recv, size_t count, int dtype,
                                  nccl_comm comm, nccl_stream stream)
{
    (void)stream;
    return sim_record((sim_call){SIM_ALL_GATHER, send, recv, count, dtype, 0, 0}, comm);
}

static nccl_result sim_reduce_scatter(const void *send, void *recv, size_t count, int dtype, int op,
                                      nccl_comm comm, nccl_stream stream)
{
    (void)stream;
    return sim_record((sim_call){SIM_REDUCE_SCATTER, send, recv, count, dtype, op, 0}, comm);
}

static nccl_result sim_comm_destroy(nccl_comm comm)
{
    (void)sim_rank(comm);
    return 0;
}

/* Rank r's shard of `total` over n, computed here apart from nccl_shard. */
static void shard_of(uint32_t n, uint64_t total, uint32_t r, uint64_t *off, uint64_t *cnt)
{
    *off = 0;
    for (uint32_t q = 0; q <= r; q++) {
        uint64_t c = total / n + (q < total % n ? 1 : 0);
        if (q == r)
            *cnt = c;
        else
            *off += c;
    }
}

static double fold_ref(double a, double b, cubec_reduce_op op)
{
    return op == CUBEC_REDUCE_SUM ? a + b : (a > b ? a : b);
}

/* One collective over n host "ranks" through the stand-in, checked against the reference. */
static void sim_check(nccl_group *g, uint32_t n, nccl_kind kind, uint64_t total, int dt,
                      cubec_reduce_op op, int per_shard)
{
    const uint32_t es = esize(dt), root = n - 1;
    const uint64_t cap = total + SENTINEL_ELEMS;
    char *in[SIM_RANKS], *out[SIM_RANKS];
    for (uint32_t r = 0; r < n; r++) {
        in[r] = malloc(cap * es);
        out[r] = malloc(cap * es);
        assert_true(in[r] && out[r]);
        for (uint64_t i = 0; i < cap; i++) {
            put(in[r], dt, i, input_value(i, (int)r + 1));
            put(out[r], dt, i, input_value(i, 100));
        }
    }
    const int in_place = kind == NCCL_KIND_ALL_REDUCE || kind == NCCL_KIND_BROADCAST;
    char **dst = in_place ? in : out;
    /* want[r][i] for i < cap: what rank r's destination must hold afterwards. */
    double *want = malloc(n * cap * sizeof *want);
    assert_non_null(want);
    for (uint32_t r = 0; r < n; r++)
        for (uint64_t i = 0; i < cap; i++) {
            double *w = &want[r * cap + i];
            *w = get(dst[r], dt, i); /* untouched unless set below */
            uint64_t off = 0, cnt = 0;
            if (kind == NCCL_KIND_ALL_REDUCE && i < total) {
                *w = input_value(i, 1);
                for (uint32_t k = 1; k < n; k++)
                    *w = fold_ref(*w, input_value(i, (int)k + 1), op);
            } else if (kind == NCCL_KIND_BROADCAST && i < total) {
                *w = input_value(i, (int)root + 1);
            } else if (kind == NCCL_KIND_ALL_GATHER && i < total) {
                for (uint32_t k = 0; k < n; k++) {
                    shard_of(n, total, k, &off, &cnt);
                    if (i >= off && i < off + cnt) *w = input_value(i - off, (int)k + 1);
                }
            } else if (kind == NCCL_KIND_REDUCE_SCATTER) {
                shard_of(n, total, r, &off, &cnt);
                if (i < cnt) {
                    *w = input_value(off + i, 1);
                    for (uint32_t k = 1; k < n; k++)
                        *w = fold_ref(*w, input_value(off + i, (int)k + 1), op);
                }
            }
        }
    nccl_group_force_per_shard(g, per_shard);
    sim_n = n;
    ASSERT_OK(nccl_group_queue_for_test(g, kind, in, dst, total, (cubec_dtype)dt, op, root));
    assert_int_equal(sim.outside_group, 0);
    assert_int_equal(sim.depth, 0);
    assert_int_equal(sim.mismatches, 0);
    for (uint32_t r = 0; r < n; r++)
        for (uint64_t i = 0; i < cap; i++)
            if (get(dst[r], dt, i) != want[r * cap + i])
                fail_msg("kind %d, n %u, total %llu, dtype %d, op %d, per_shard %d: rank %u "
                         "element %llu is %g, want %g",
                         (int)kind, n, (unsigned long long)total, dt, (int)op, per_shard, r,
                         (unsigned long long)i, get(dst[r], dt, i), want[r * cap + i]);
    free(want);
    for (uint32_t r = 0; r < n; r++) {
        free(in[r]);
        free(out[r]);
    }
}

static void test_collectives_as_nccl_calls(void **state)
{
    (void)state;
    nccl_driver nc = {0};
    nc.group_start = sim_group_start;
    nc.group_end = sim_group_end;
    nc.all_reduce = sim_all_reduce;
    nc.broadcast = sim_broadcast;
    nc.reduce = sim_reduce;
    nc.all_gather = sim_all_gather;
    nc.reduce_scatter = sim_reduce_scatter;
    nc.comm_destroy = sim_comm_destroy;
    static const int dtypes[] = {CUBEC_DTYPE_F32, DTYPE_F16, CUBEC_DTYPE_I32};
    static const nccl_kind kinds[] = {NCCL_KIND_ALL_REDUCE, NCCL_KIND_BROADCAST,
                                      NCCL_KIND_ALL_GATHER, NCCL_KIND_REDUCE_SCATTER};
    memset(&sim, 0, sizeof sim);
    for (uint32_t n = 1; n <= SIM_RANKS; n++) {
        nccl_group *g = nccl_group_open_for_test(&nc, n);
        assert_non_null(g);
        const uint64_t totals[] = {1, n > 1 ? n - 1 : 2, 7, 5 * (uint64_t)n, 1001};
        for (size_t z = 0; z < sizeof totals / sizeof totals[0]; z++)
            for (size_t t = 0; t < 3; t++)
                for (size_t k = 0; k < 4; k++)
                    for (int op = CUBEC_REDUCE_SUM; op <= CUBEC_REDUCE_MAX; op++)
                        for (int per_shard = 0; per_shard < 2; per_shard++)
                            sim_check(g, n, kinds[k], totals[z], dtypes[t], (cubec_reduce_op)op,
                                      per_shard);
        nccl_group_close(g);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing_library_is_named),
        cmocka_unit_test(test_missing_entry_point_is_named),
        cmocka_unit_test(test_old_version_is_refused),
        cmocka_unit_test(test_stand_in_loads),
        cmocka_unit_test(test_real_library_loads),
        cmocka_unit_test(test_open_refusals),
        cmocka_unit_test(test_without_nccl_refused),
        cmocka_unit_test(test_without_cuda_device_refused),
        cmocka_unit_test(test_shard_rule),
        cmocka_unit_test(test_collectives_as_nccl_calls),
        cmocka_unit_test(test_one_rank_every_collective),
        cmocka_unit_test(test_waits_for_cubec_writer),
        cmocka_unit_test(test_collective_refusals),
        cmocka_unit_test(test_input_failure_reaches_outputs),
        cmocka_unit_test(test_old_output_failure_cleared),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
