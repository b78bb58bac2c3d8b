/* Optional shader features on the WebGPU backend (src/gpu/webgpu/wg_features.c, docs/device.md
 * "The WebGPU backend"): the probe's mask on a made-up adapter, then on the implementation
 * tests/webgpu/CMakeLists.txt points CUBEC_WEBGPU_LIBRARY at (wgpu-native on lavapipe here) an
 * f16, a subgroup reduction and an int64 kernel, each in GLSL (through naga's SPIR-V front end)
 * and in WGSL, against CPU references, and the same kernels refused by name when
 * CUBEC_DISABLE_FEATURES turns their features off. A kernel whose feature the adapter lacks is
 * skipped, saying so; without the library the device cases skip by name. */
#include "gpu/webgpu/wg_features.h"
#include "kernel/wgsl_reflect.h"
#include "launch_util.h"
#include "test_util.h"
#include "webgpu_open.h"

#include <spirv_cross/spirv.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 1024u

/* --- The probe's mask, on a made-up adapter ---------------------------------------------- */

typedef struct fake_adapter {
    const uint32_t *has;
    size_t count;
} fake_adapter;

static int fake_has(void *user, WGPUFeatureName f)
{
    const fake_adapter *a = user;
    for (size_t i = 0; i < a->count; i++)
        if (a->has[i] == (uint32_t)f) return 1;
    return 0;
}

static int requested(const WGPUFeatureName *out, size_t n, uint32_t f)
{
    for (size_t i = 0; i < n; i++)
        if ((uint32_t)out[i] == f) return 1;
    return 0;
}

#define SUBGROUP_BITS                                                                              \
    (CUBEC_FEATURE_SUBGROUP_VOTE | CUBEC_FEATURE_SUBGROUP_ARITHMETIC |                             \
     CUBEC_FEATURE_SUBGROUP_BALLOT | CUBEC_FEATURE_SUBGROUP_SHUFFLE |                              \
     CUBEC_FEATURE_SUBGROUP_SHUFFLE_RELATIVE)

static void test_probe_mask(void **state)
{
    (void)state;
    /* wgpu-native on lavapipe: ShaderF16, the native Subgroup (not the standard Subgroups),
     * ShaderF64, ShaderI16, ShaderInt64, ShaderInt64AtomicAllOps, Immediates. */
    const uint32_t lavapipe[] = {0x0B, 0x30001, 0x30021, 0x3001D, 0x3001E, 0x30026, 0x3002D};
    fake_adapter a = {lavapipe, sizeof lavapipe / sizeof lavapipe[0]};
    WGPUFeatureName out[WG_FEATURE_MAX + 1];
    size_t n = 1; /* one already there (the immediates): appended after it */
    out[0] = (WGPUFeatureName)0x30001;
    feature_set set = {0};
    wg_features_probe(fake_has, &a, 0, out, &n, &set);
    const uint32_t f16 = CUBEC_FEATURE_FLOAT16 | CUBEC_FEATURE_STORAGE_BUFFER_16BIT |
                         CUBEC_FEATURE_UNIFORM_AND_STORAGE_BUFFER_16BIT;
    const uint32_t all = f16 | SUBGROUP_BITS | CUBEC_FEATURE_FLOAT64 | CUBEC_FEATURE_INT64 |
                         CUBEC_FEATURE_INT64_ATOMICS;
    assert_int_equal(set.enabled, all);
    assert_int_equal(set.disabled, 0);
    assert_int_equal(n, 6);
    assert_int_equal((uint32_t)out[0], 0x30001);
    for (uint32_t f = 0; f < 5; f++)
        assert_true(
            requested(out, n, (const uint32_t[]){0x0B, 0x30021, 0x3001D, 0x30026, 0x3002D}[f]));
    /* ShaderI16 is never asked for: naga takes no 16-bit integers. */
    assert_false(requested(out, n, 0x3001E));
    assert_false(set.enabled & CUBEC_FEATURE_INT16);

    /* 16-bit storage off takes 16-bit uniform access with it (as on Vulkan); float16 stays,
     * and ShaderF16 is requested for it. */
    n = 0;
    wg_features_probe(fake_has, &a, CUBEC_FEATURE_STORAGE_BUFFER_16BIT, out, &n, &set);
    assert_int_equal(set.enabled,
                     all & ~(uint32_t)(CUBEC_FEATURE_STORAGE_BUFFER_16BIT |
                                       CUBEC_FEATURE_UNIFORM_AND_STORAGE_BUFFER_16BIT));
    assert_true(requested(out, n, 0x0B));

    /* Disabled bits: the feature is still requested while a bit of its group stays on; int64
     * off takes its atomics with it; a whole group off is not requested. */
    n = 0;
    wg_features_probe(fake_has, &a,
                      CUBEC_FEATURE_SUBGROUP_ARITHMETIC | CUBEC_FEATURE_INT64 | f16 |
                          CUBEC_FEATURE_INT8,
                      out, &n, &set);
    assert_int_equal(set.enabled, (SUBGROUP_BITS & ~(uint32_t)CUBEC_FEATURE_SUBGROUP_ARITHMETIC) |
                                      CUBEC_FEATURE_FLOAT64);
    assert_int_equal(set.disabled, CUBEC_FEATURE_SUBGROUP_ARITHMETIC | CUBEC_FEATURE_INT64 |
                                       CUBEC_FEATURE_INT64_ATOMICS | f16);
    assert_int_equal(n, 2);
    assert_true(requested(out, n, 0x30021));
    assert_true(requested(out, n, 0x3001D));

    /* The standard Subgroups where listed (Dawn): the native one is not asked for besides. */
    const uint32_t dawn[] = {0x0B, 0x12, 0x30021};
    a = (fake_adapter){dawn, 3};
    n = 0;
    wg_features_probe(fake_has, &a, 0, out, &n, &set);
    assert_int_equal(set.enabled, f16 | SUBGROUP_BITS);
    assert_int_equal(n, 2);
    assert_true(requested(out, n, 0x12));
    assert_false(requested(out, n, 0x30021));

    /* An adapter without any: nothing enabled, nothing requested. */
    a = (fake_adapter){NULL, 0};
    n = 0;
    wg_features_probe(fake_has, &a, UINT32_MAX, out, &n, &set);
    assert_int_equal(set.enabled, 0);
    assert_int_equal(set.disabled, 0);
    assert_int_equal(n, 0);
}

/* --- The features a WGSL kernel uses, as capabilities (wgsl_reflect) -------------------- */

static int has_capability(const kernel_reflection *r, uint32_t c)
{
    for (uint32_t i = 0; i < r->capability_count; i++)
        if (r->capabilities[i] == c) return 1;
    return 0;
}

static void test_wgsl_capabilities(void **state)
{
    (void)state;
    static const char src[] =
        "enable f16;\n"
        "// u64 and subgroupAdd in a comment say nothing\n"
        "@group(0) @binding(0) var<storage, read_write> o: array<atomic<u64>>;\n"
        "@compute @workgroup_size(64)\n"
        "fn main(@builtin(global_invocation_id) id: vec3<u32>) {\n"
        "    let x = subgroupShuffleUp(id.x, 1u) + subgroupExclusiveAdd(id.x);\n"
        "    atomicAdd(&o[0], u64(x));\n"
        "}\n";
    kernel_reflection r;
    char *module = NULL;
    ASSERT_OK(wgsl_reflect("k", src, "main", &r, &module));
    free(module);
    assert_true(has_capability(&r, SpvCapabilityFloat16));
    assert_true(has_capability(&r, SpvCapabilityInt64));
    assert_true(has_capability(&r, SpvCapabilityInt64Atomics));
    assert_true(has_capability(&r, SpvCapabilityGroupNonUniformShuffleRelative));
    assert_true(has_capability(&r, SpvCapabilityGroupNonUniformArithmetic));
    assert_int_equal(r.capability_count, 5);
    /* None used: none declared; a word that only starts like one (u64x, subgroupAddy) is not. */
    static const char plain[] = "@group(0) @binding(0) var<storage, read_write> o: array<u32>;\n"
                                "@compute @workgroup_size(1)\n"
                                "fn main() { let u64x = 1u; let subgroupAddy = 2u;\n"
                                "    o[0] = u64x + subgroupAddy; }\n";
    ASSERT_OK(wgsl_reflect("k", plain, "main", &r, &module));
    free(module);
    assert_int_equal(r.capability_count, 0);
}

/* --- Kernels on the device ------------------------------------------------------------- */

/* The device, or NULL (the case then skips, saying why) when it lacks `bit`. */
static cubec_device *open_with(uint32_t bit)
{
    cubec_device *d = open_webgpu();
    if (!d) return NULL;
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    if (!(info.features & bit)) {
        printf("skipped: WebGPU adapter '%s' lacks %s\n", info.name,
               cubec_feature_name((cubec_feature)bit));
        cubec_device_close(d);
        return NULL;
    }
    return d;
}

static cubec_status kernel_of(cubec_device *d, const char *name, const char *glsl, const char *wgsl,
                              cubec_kernel *out)
{
    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    kd.name = name;
    kd.glsl = glsl;
    kd.wgsl = wgsl;
    return cubec_kernel_create(d, &kd, out);
}

/* Runs kernel k over N invocations (64 a workgroup) with buffers in[0..in_count) uploaded and
 * an output of out_words zeroed words, and compares the output with want. */
/* Runs `k` over `in` and checks every output word against want[i], or against alt[i] where `alt`
 * is given (a second result the language allows). */
static void run_and_check(cubec_device *d, cubec_kernel k, const uint32_t *in, uint32_t out_words,
                          const uint32_t *want, const uint32_t *alt, const char *what)
{
    cubec_buffer b[2];
    ASSERT_OK(cubec_buffer_from(d, 0, in, N * 4u, &b[0]));
    uint32_t *zero = calloc(out_words, 4);
    assert_non_null(zero);
    ASSERT_OK(cubec_buffer_from(d, 0, zero, out_words * 4u, &b[1]));
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.buffers = b;
    ld.buffer_count = 2;
    ld.groups[0] = N / 64;
    ld.groups[1] = ld.groups[2] = 1;
    ASSERT_OK(cubec_launch(d, 0, &ld));
    ASSERT_OK(cubec_read(d, 0, b[1], 0, zero, out_words * 4u));
    for (uint32_t i = 0; i < out_words; i++)
        if (zero[i] != want[i] && !(alt && zero[i] == alt[i]))
            fail_msg("%s: word %u is %u, expected %u%s%u", what, i, zero[i], want[i],
                     alt ? " or " : "", alt ? alt[i] : 0u);
    for (int i = 0; i < 2; i++)
        ASSERT_OK(cubec_buffer_release(d, b[i]));
    free(zero);
}

/* f16: o = f32(h * h * h + 0.5) with h = f16(a), each step rounded to f16. */
static const char f16_glsl[] =
    "#version 450\n"
    "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) readonly buffer A { float a[]; };\n"
    "layout(std430, binding = 1) writeonly buffer O { float o[]; };\n"
    "void main() {\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    float16_t h = float16_t(a[i]);\n"
    "    o[i] = float(h * h * h + float16_t(0.5));\n"
    "}\n";

static const char f16_wgsl[] = "enable f16;\n"
                               "@group(0) @binding(0) var<storage, read> a: array<f32>;\n"
                               "@group(0) @binding(1) var<storage, read_write> o: array<f32>;\n"
                               "@compute @workgroup_size(64)\n"
                               "fn main(@builtin(global_invocation_id) id: vec3<u32>) {\n"
                               "    let h = f16(a[id.x]);\n"
                               "    o[id.x] = f32(h * h * h + 0.5h);\n"
                               "}\n";

/* x rounded to the nearest f16 (ties to even), for the normal range the kernel stays in. */
static float round_f16(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    u = (u + 0x0FFFu + ((u >> 13) & 1u)) & ~0x1FFFu;
    memcpy(&x, &u, 4);
    return x;
}

static void test_float16(void **state)
{
    (void)state;
    cubec_device *d = open_with(CUBEC_FEATURE_FLOAT16);
    if (!d) skip();
    uint32_t in[N], want[N], fused[N];
    int differ = 0;
    for (uint32_t i = 0; i < N; i++) {
        /* Integers to 31 and halves: h * h * h rounds past 2048 (the f16 grid is coarser). */
        float a = (float)(i % 64u) * 0.5f;
        memcpy(&in[i], &a, 4);
        float h2 = round_f16(a * a);
        float r = round_f16(round_f16(h2 * a) + 0.5f);
        memcpy(&want[i], &r, 4);
        /* GLSL and WGSL let a compiler fuse the last multiply and add into one rounding (an
         * fma): NVIDIA's does (11.5^3 + 0.5 gives 1521, not 1522). Both results are right;
         * h2 * a + 0.5 is exact in a float, so one f16 rounding of it is the fused one. */
        float f = round_f16(h2 * a + 0.5f);
        memcpy(&fused[i], &f, 4);
        differ += fused[i] != want[i];
    }
    assert_true(differ > 0); /* the inputs tell the two apart: either is checked exactly */
    const char *src[2][2] = {{f16_glsl, NULL}, {NULL, f16_wgsl}};
    const char *what[2] = {"an f16 GLSL kernel on webgpu", "an f16 WGSL kernel on webgpu"};
    for (int v = 0; v < 2; v++) {
        cubec_kernel k;
        ASSERT_OK(kernel_of(d, "f16_cube", src[v][0], src[v][1], &k));
        run_and_check(d, k, in, N, want, fused, what[v]);
        ASSERT_OK(cubec_kernel_destroy(d, k));
    }
    cubec_device_close(d);
}

/* Subgroup reduction: each subgroup's sum (subgroupAdd), added once per subgroup (by its first
 * invocation: naga refuses SPIR-V's OpGroupNonUniformElect and knows no WGSL subgroupElect) to
 * o[0]: the total of a whatever the subgroups' size and layout. o[1] counts the subgroups, o[2]
 * holds the size the kernel saw. The WGSL says `enable subgroups;` as the standard wants, which
 * the backend drops for wgpu-native's naga (wg_pipeline.c). */
static const char subgroup_glsl[] = "#version 450\n"
                                    "#extension GL_KHR_shader_subgroup_arithmetic : require\n"
                                    "layout(local_size_x = 64) in;\n"
                                    "layout(std430, binding = 0) readonly buffer A { uint a[]; };\n"
                                    "layout(std430, binding = 1) buffer O { uint o[]; };\n"
                                    "void main() {\n"
                                    "    uint s = subgroupAdd(a[gl_GlobalInvocationID.x]);\n"
                                    "    if (gl_SubgroupInvocationID == 0u) {\n"
                                    "        atomicAdd(o[0], s);\n"
                                    "        atomicAdd(o[1], 1u);\n"
                                    "        atomicMax(o[2], gl_SubgroupSize);\n"
                                    "    }\n"
                                    "}\n";

static const char subgroup_wgsl[] =
    "enable subgroups;\n"
    "@group(0) @binding(0) var<storage, read> a: array<u32>;\n"
    "@group(0) @binding(1) var<storage, read_write> o: array<atomic<u32>>;\n"
    "@compute @workgroup_size(64)\n"
    "fn main(@builtin(global_invocation_id) id: vec3<u32>,\n"
    "        @builtin(subgroup_size) size: u32,\n"
    "        @builtin(subgroup_invocation_id) lane: u32) {\n"
    "    let s = subgroupAdd(a[id.x]);\n"
    "    if (lane == 0u) {\n"
    "        atomicAdd(&o[0], s);\n"
    "        atomicAdd(&o[1], 1u);\n"
    "        atomicMax(&o[2], size);\n"
    "    }\n"
    "}\n";

static void test_subgroup_reduction(void **state)
{
    (void)state;
    cubec_device *d = open_with(CUBEC_FEATURE_SUBGROUP_ARITHMETIC);
    if (!d) skip();
    uint32_t in[N], total = 0, seed = 17;
    for (uint32_t i = 0; i < N; i++) {
        in[i] = test_rand(&seed) % 1000u;
        total += in[i];
    }
    const char *src[2][2] = {{subgroup_glsl, NULL}, {NULL, subgroup_wgsl}};
    const char *what[2] = {"a subgroupAdd GLSL kernel on webgpu",
                           "a subgroupAdd WGSL kernel on webgpu"};
    for (int v = 0; v < 2; v++) {
        cubec_kernel k;
        ASSERT_OK(kernel_of(d, "subgroup_sum", src[v][0], src[v][1], &k));
        cubec_buffer b[2];
        ASSERT_OK(cubec_buffer_from(d, 0, in, sizeof in, &b[0]));
        uint32_t zero[4] = {0};
        ASSERT_OK(cubec_buffer_from(d, 0, zero, sizeof zero, &b[1]));
        cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
        ld.kernel = k;
        ld.buffers = b;
        ld.buffer_count = 2;
        ld.groups[0] = N / 64;
        ld.groups[1] = ld.groups[2] = 1;
        ASSERT_OK(cubec_launch(d, 0, &ld));
        uint32_t got[4];
        ASSERT_OK(cubec_read(d, 0, b[1], 0, got, sizeof got));
        printf("%s: %u subgroups of %u\n", what[v], got[1], got[2]);
        /* The sum is the total only if subgroupAdd summed each subgroup (one invocation per
         * subgroup adds); the subgroups cover the N invocations. */
        assert_int_equal(got[0], total);
        assert_true(got[2] >= 1 && got[1] * got[2] >= N);
        /* The size the device reports (measured at open where wgpu-native reports none) is
         * the one kernels run with, and cubec_device_peek says the same. */
        cubec_device_info info = CUBEC_DEVICE_INFO_INIT, peeked = CUBEC_DEVICE_INFO_INIT;
        ASSERT_OK(cubec_device_get_info(d, &info));
        ASSERT_OK(cubec_device_peek(0, &peeked));
        assert_true(got[2] >= info.min_subgroup_size && got[2] <= info.max_subgroup_size);
        assert_int_equal(info.subgroup_size, info.max_subgroup_size);
        assert_int_equal(peeked.subgroup_size, info.subgroup_size);
        assert_int_equal(peeked.min_subgroup_size, info.min_subgroup_size);
        assert_int_equal(peeked.max_subgroup_size, info.max_subgroup_size);
        for (int i = 0; i < 2; i++)
            ASSERT_OK(cubec_buffer_release(d, b[i]));
        ASSERT_OK(cubec_kernel_destroy(d, k));
    }
    cubec_device_close(d);
}

/* int64: the 64-bit product of two 32-bit words, low word then high word. */
static const char int64_glsl[] =
    "#version 450\n"
    "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) readonly buffer A { uint a[]; };\n"
    "layout(std430, binding = 1) writeonly buffer O { uint o[]; };\n"
    "void main() {\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    uint64_t p = uint64_t(a[i]) * uint64_t(a[i] ^ 0x9e3779b9u);\n"
    "    o[2 * i] = uint(p);\n"
    "    o[2 * i + 1] = uint(p >> 32);\n"
    "}\n";

static const char int64_wgsl[] = "@group(0) @binding(0) var<storage, read> a: array<u32>;\n"
                                 "@group(0) @binding(1) var<storage, read_write> o: array<u32>;\n"
                                 "@compute @workgroup_size(64)\n"
                                 "fn main(@builtin(global_invocation_id) id: vec3<u32>) {\n"
                                 "    let i = id.x;\n"
                                 "    let p: u64 = u64(a[i]) * u64(a[i] ^ 0x9e3779b9u);\n"
                                 "    o[2u * i] = u32(p);\n"
                                 "    o[2u * i + 1u] = u32(p >> 32u);\n"
                                 "}\n";

static void test_int64(void **state)
{
    (void)state;
    cubec_device *d = open_with(CUBEC_FEATURE_INT64);
    if (!d) skip();
    uint32_t in[N], seed = 29;
    uint32_t *want = malloc(2 * N * 4u);
    assert_non_null(want);
    for (uint32_t i = 0; i < N; i++) {
        in[i] = test_rand(&seed);
        uint64_t p = (uint64_t)in[i] * (uint64_t)(in[i] ^ 0x9e3779b9u);
        want[2 * i] = (uint32_t)p;
        want[2 * i + 1] = (uint32_t)(p >> 32);
    }
    const char *src[2][2] = {{int64_glsl, NULL}, {NULL, int64_wgsl}};
    const char *what[2] = {"an int64 GLSL kernel on webgpu", "an int64 WGSL kernel on webgpu"};
    for (int v = 0; v < 2; v++) {
        cubec_kernel k;
        ASSERT_OK(kernel_of(d, "mul_wide", src[v][0], src[v][1], &k));
        run_and_check(d, k, in, 2 * N, want, NULL, what[v]);
        ASSERT_OK(cubec_kernel_destroy(d, k));
    }
    free(want);
    cubec_device_close(d);
}

/* With the features turned off by CUBEC_DISABLE_FEATURES, each kernel is refused by name at
 * creation (before naga sees it), the info lists none of them, and a kernel without them runs. */
static void test_disabled_features_refused(void **state)
{
    (void)state;
    cubec_device *d = open_webgpu();
    if (!d) skip();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    cubec_device_close(d);
    const uint32_t wanted =
        CUBEC_FEATURE_FLOAT16 | CUBEC_FEATURE_SUBGROUP_ARITHMETIC | CUBEC_FEATURE_INT64;
    if ((info.features & wanted) != wanted) {
        printf("skipped: WebGPU adapter '%s' lacks float16, subgroup_arithmetic or int64\n",
               info.name);
        skip();
    }
    setenv("CUBEC_DISABLE_FEATURES", "float16,subgroup_arithmetic,int64", 1);
    d = open_webgpu();
    unsetenv("CUBEC_DISABLE_FEATURES");
    assert_non_null(d);
    ASSERT_OK(cubec_device_get_info(d, &info));
    assert_int_equal(info.features & wanted, 0);
    /* The rest of the subgroup group stays on: its WebGPU feature is still requested. */
    assert_true(info.features & CUBEC_FEATURE_SUBGROUP_BALLOT);
    const struct {
        const char *glsl, *wgsl, *needle;
    } cases[] = {
        {f16_glsl, NULL, "capability Float16, which needs the device feature float16"},
        {NULL, f16_wgsl, "capability Float16, which needs the device feature float16"},
        {subgroup_glsl, NULL,
         "GroupNonUniformArithmetic, which needs the device feature "
         "subgroup_arithmetic"},
        {NULL, subgroup_wgsl,
         "GroupNonUniformArithmetic, which needs the device feature "
         "subgroup_arithmetic"},
        {int64_glsl, NULL, "capability Int64, which needs the device feature int64"},
        {NULL, int64_wgsl, "capability Int64, which needs the device feature int64"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cubec_kernel k;
        cubec_status st = kernel_of(d, "needs_a_feature", cases[i].glsl, cases[i].wgsl, &k);
        printf("case %zu: %s\n", i, st ? cubec_status_message(st) : "(created)");
        assert_non_null(st);
        assert_int_equal(cubec_status_code(st), CUBEC_UNSUPPORTED);
        assert_non_null(strstr(cubec_status_message(st), cases[i].needle));
        assert_non_null(strstr(cubec_status_message(st), "disable_features"));
        cubec_status_free(st);
    }
    cubec_device_close(d);
}

int main(void)
{
    /* cubec_device_peek asks the configured backend. */
    setenv("CUBEC_BACKEND", "webgpu", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe_mask), cmocka_unit_test(test_wgsl_capabilities),
        cmocka_unit_test(test_float16),    cmocka_unit_test(test_subgroup_reduction),
        cmocka_unit_test(test_int64),      cmocka_unit_test(test_disabled_features_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
