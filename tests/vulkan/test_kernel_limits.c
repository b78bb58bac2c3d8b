/* Shader input is checked before the driver sees it (docs/errors.md, "Shader input"): each test
 * builds a kernel just past one check and expects cubec_kernel_create to refuse it with the
 * exact code and a message naming the kernel, the value and the limit, then builds the same kernel
 * exactly at the limit and checks that it is accepted and computes what a CPU reference computes.
 * The validation layer is on (test_device_open) and any message it prints fails the test: before
 * these checks, kernels over the shared-memory and push-constant limits or with 64-bit atomics on
 * shared memory reached the driver, which the layer reports.
 *
 * Limits come from the device's cubec_device_info, so the test holds on any device; the sizes in
 * the comments are lavapipe's. SPIR-V inputs are compiled from GLSL with cubec's own compiler
 * (kernel/glsl_compiler.h) and then altered word by word, or assembled by SPIRV-Tools. */
#include "test_util.h"

#include "kernel/glsl_compiler.h"

/* libspirv.h defines (not declares) a const kDefaultMaxIdBound at file scope; a per-file name
 * keeps two C files that include it from clashing at link time. */
#define kDefaultMaxIdBound test_kernel_limits_spirv_tools_max_id_bound_
#include <spirv-tools/libspirv.h>
#undef kDefaultMaxIdBound

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPIRV_OP_SOURCE 3u
#define SPIRV_OP_SOURCE_EXTENSION 4u
#define SPIRV_OP_CAPABILITY 17u
#define SPIRV_CAPABILITY_KERNEL 6u

static glsl_compiler *compiler;

typedef struct spirv {
    uint32_t *words;
    size_t count;
} spirv;

/* GLSL -> SPIR-V words with cubec's compiler (metadata in push constants). */
static spirv compile(const char *src, const char *entry_point)
{
    spirv m = {NULL, 0};
    ASSERT_OK(glsl_compile(compiler, "test", src, NULL, 0, entry_point, 0, 1, &m.words, &m.count));
    return m;
}

/* The word index of the first instruction with `opcode` (and, unless `operand2` is UINT32_MAX,
 * with that value in its second operand word), or 0. */
static size_t find_instruction(const spirv *m, uint32_t opcode, uint32_t operand2)
{
    for (size_t i = 5; i < m->count;) {
        uint32_t n = m->words[i] >> 16;
        assert_true(n > 0);
        if ((m->words[i] & 0xffffu) == opcode &&
            (operand2 == UINT32_MAX || (n > 2 && m->words[i + 2] == operand2)))
            return i;
        i += n;
    }
    return 0;
}

static cubec_status create_glsl(cubec_device *d, const char *name, const char *src,
                                const cubec_define *defines, uint32_t define_count,
                                const char *entry_point, cubec_kernel *k)
{
    cubec_kernel_desc kd = {.struct_size = sizeof(cubec_kernel_desc),
                            .name = name,
                            .glsl = src,
                            .defines = defines,
                            .define_count = define_count,
                            .entry_point = entry_point};
    return cubec_kernel_create(d, &kd, k);
}

static cubec_status create_spirv(cubec_device *d, const char *name, const spirv *m,
                                 const char *entry_point, cubec_kernel *k)
{
    cubec_kernel_desc kd = {.struct_size = sizeof(cubec_kernel_desc),
                            .name = name,
                            .spirv = m->words,
                            .spirv_words = m->count,
                            .entry_point = entry_point};
    return cubec_kernel_create(d, &kd, k);
}

/* Launches `k` (one writeonly uint buffer of n elements, pre-filled with a pattern the kernel
 * never writes) on `groups` workgroups and checks every element against `want`. */
static void run_and_check(cubec_device *d, cubec_kernel k, uint32_t groups, const void *info,
                          uint32_t info_size, const uint32_t *want, size_t n)
{
    uint32_t *got = malloc(n * sizeof *got);
    assert_non_null(got);
    for (size_t i = 0; i < n; i++)
        got[i] = 0xdeadbeefu;
    cubec_buffer out;
    ASSERT_OK(cubec_buffer_from(d, 0, got, n * sizeof *got, &out));
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = k,
                            .buffers = &out,
                            .buffer_count = 1,
                            .info = info,
                            .info_size = info_size,
                            .groups = {groups, 1, 1}};
    ASSERT_OK(cubec_launch(d, 0, &ld));
    memset(got, 0, n * sizeof *got);
    ASSERT_OK(cubec_read(d, 0, out, 0, got, n * sizeof *got));
    for (size_t i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("element %zu is 0x%08x, expected 0x%08x", i, got[i], want[i]);
    ASSERT_OK(cubec_buffer_release(d, out));
    free(got);
}

/* --- 1. SPIR-V validation --------------------------------------------------------------------- */

static const char five_src[] = "#version 450\n"
                               "layout(local_size_x = 64) in;\n"
                               "layout(std430, binding = 0) writeonly buffer O { uint o[]; };\n"
                               "void main() {\n"
                               "  uint i = gl_GlobalInvocationID.x;\n"
                               "  o[i] = i * 5u + 3u;\n"
                               "}\n";

static void expect_five(cubec_device *d, cubec_kernel k)
{
    uint32_t want[256];
    for (uint32_t i = 0; i < 256; i++)
        want[i] = i * 5u + 3u;
    run_and_check(d, k, 4, NULL, 0, want, 256);
}

/* Every SPIR-V module is validated for the Vulkan version cubec uses on the device (1.2: its
 * instance asks for 1.2) and a refusal names the kernel and quotes the validator. */
static void test_spirv_validated(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_kernel k = {7};
    spirv m = compile(five_src, "main");

    /* A capability Vulkan does not allow. */
    size_t cap = find_instruction(&m, SPIRV_OP_CAPABILITY, UINT32_MAX);
    assert_true(cap > 0);
    m.words[cap + 1] = SPIRV_CAPABILITY_KERNEL;
    ASSERT_ERROR(create_spirv(d, "corrupt", &m, NULL, &k), CUBEC_INVALID_SPIRV,
                 "kernel 'corrupt': SPIR-V validation failed (Vulkan 1.2, at instruction 1): "
                 "Capability Kernel is not allowed by Vulkan 1.2 specification");
    assert_int_equal(k.id, 0);
    /* Refused again: a refused kernel is not cached as if it had been made. */
    ASSERT_ERROR(create_spirv(d, "corrupt", &m, NULL, &k), CUBEC_INVALID_SPIRV,
                 "Capability Kernel is not allowed by Vulkan 1.2 specification");
    m.words[cap + 1] = 1; /* Shader */

    /* An id bound below the ids the module uses. */
    uint32_t bound = m.words[3];
    m.words[3] = 4;
    ASSERT_ERROR(create_spirv(d, "bound", &m, NULL, &k), CUBEC_INVALID_SPIRV,
                 "kernel 'bound': SPIR-V validation failed (Vulkan 1.2");
    m.words[3] = bound;

    /* SPIR-V 1.6 is Vulkan 1.3's: the layer would refuse it on a 1.2 instance, so cubec does. */
    uint32_t version = m.words[1];
    m.words[1] = 0x00010600u;
    ASSERT_ERROR(create_spirv(d, "spirv16", &m, NULL, &k), CUBEC_INVALID_SPIRV,
                 "kernel 'spirv16': SPIR-V validation failed (Vulkan 1.2): Invalid SPIR-V binary "
                 "version 1.6");
    m.words[1] = version;

    /* The module as compiled is accepted and runs. */
    ASSERT_OK(create_spirv(d, "five", &m, NULL, &k));
    expect_five(d, k);
    ASSERT_OK(cubec_kernel_destroy(d, k));
    free(m.words);
    test_device_close(d);
}

/* --- 2. Device limits ------------------------------------------------------------------------- */

/* Each invocation writes its local coordinates to its local index, as SPIR-V assembly with the
 * workgroup size left to fill in: glslang checks sizes against its own limits (1024 x 1024 x 64)
 * rather than the device's, and declares a WorkgroupSize built-in that would override a patched
 * LocalSize. */
static const char coords_asm[] = "OpCapability Shader\n"
                                 "OpMemoryModel Logical GLSL450\n"
                                 "OpEntryPoint GLCompute %%main \"main\" %%lid %%lidx %%buf\n"
                                 "OpExecutionMode %%main LocalSize %u %u %u\n"
                                 "OpDecorate %%lid BuiltIn LocalInvocationId\n"
                                 "OpDecorate %%lidx BuiltIn LocalInvocationIndex\n"
                                 "OpDecorate %%rta ArrayStride 4\n"
                                 "OpMemberDecorate %%O 0 Offset 0\n"
                                 "OpMemberDecorate %%O 0 NonReadable\n"
                                 "OpDecorate %%O Block\n"
                                 "OpDecorate %%buf DescriptorSet 0\n"
                                 "OpDecorate %%buf Binding 0\n"
                                 "%%void = OpTypeVoid\n"
                                 "%%fn = OpTypeFunction %%void\n"
                                 "%%uint = OpTypeInt 32 0\n"
                                 "%%v3 = OpTypeVector %%uint 3\n"
                                 "%%pin3 = OpTypePointer Input %%v3\n"
                                 "%%pin = OpTypePointer Input %%uint\n"
                                 "%%lid = OpVariable %%pin3 Input\n"
                                 "%%lidx = OpVariable %%pin Input\n"
                                 "%%rta = OpTypeRuntimeArray %%uint\n"
                                 "%%O = OpTypeStruct %%rta\n"
                                 "%%pO = OpTypePointer StorageBuffer %%O\n"
                                 "%%buf = OpVariable %%pO StorageBuffer\n"
                                 "%%psb = OpTypePointer StorageBuffer %%uint\n"
                                 "%%c0 = OpConstant %%uint 0\n"
                                 "%%c10 = OpConstant %%uint 10\n"
                                 "%%c20 = OpConstant %%uint 20\n"
                                 "%%main = OpFunction %%void None %%fn\n"
                                 "%%entry = OpLabel\n"
                                 "%%l = OpLoad %%v3 %%lid\n"
                                 "%%x = OpCompositeExtract %%uint %%l 0\n"
                                 "%%y = OpCompositeExtract %%uint %%l 1\n"
                                 "%%z = OpCompositeExtract %%uint %%l 2\n"
                                 "%%ys = OpShiftLeftLogical %%uint %%y %%c10\n"
                                 "%%zs = OpShiftLeftLogical %%uint %%z %%c20\n"
                                 "%%xy = OpBitwiseOr %%uint %%x %%ys\n"
                                 "%%v = OpBitwiseOr %%uint %%xy %%zs\n"
                                 "%%i = OpLoad %%uint %%lidx\n"
                                 "%%p = OpAccessChain %%psb %%buf %%c0 %%i\n"
                                 "OpStore %%p %%v\n"
                                 "OpReturn\n"
                                 "OpFunctionEnd\n";

static cubec_status create_sized(cubec_device *d, const char *name, uint32_t x, uint32_t y,
                                 uint32_t z, cubec_kernel *k)
{
    char text[4096];
    snprintf(text, sizeof text, coords_asm, x, y, z);
    spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_2);
    assert_non_null(ctx);
    spv_binary binary = NULL;
    spv_diagnostic diag = NULL;
    if (spvTextToBinary(ctx, text, strlen(text), &binary, &diag) != SPV_SUCCESS)
        fail_msg("assembly failed: %s", diag && diag->error ? diag->error : "?");
    spirv m = {binary->code, binary->wordCount};
    cubec_status s = create_spirv(d, name, &m, NULL, k);
    spvBinaryDestroy(binary);
    spvDiagnosticDestroy(diag);
    spvContextDestroy(ctx);
    return s;
}

static void expect_coords(cubec_device *d, cubec_kernel k, uint32_t x, uint32_t y, uint32_t z)
{
    size_t n = (size_t)x * y * z;
    uint32_t *want = malloc(n * sizeof *want);
    assert_non_null(want);
    for (uint32_t c = 0; c < z; c++)
        for (uint32_t b = 0; b < y; b++)
            for (uint32_t a = 0; a < x; a++)
                want[((size_t)c * y + b) * x + a] = a | (b << 10) | (c << 20);
    run_and_check(d, k, 1, NULL, 0, want, n);
    free(want);
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
    return a < b ? a : b;
}

/* Each dimension of the workgroup size and the invocations of a workgroup. */
static void test_workgroup_size(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    const uint32_t *max = info.max_workgroup_size, inv = info.max_workgroup_invocations;
    cubec_kernel k = {7};
    char want[256];
    for (int i = 0; i < 3; i++) {
        uint32_t size[3] = {1, 1, 1};
        size[i] = max[i] + 1;
        snprintf(want, sizeof want,
                 "kernel 'wide': workgroup size %c = %u exceeds the device limit of %u "
                 "(maxComputeWorkGroupSize[%d])",
                 "xyz"[i], max[i] + 1, max[i], i);
        ASSERT_ERROR(create_sized(d, "wide", size[0], size[1], size[2], &k), CUBEC_UNSUPPORTED,
                     want);
        assert_int_equal(k.id, 0);
        /* At the limit of the dimension (or of the invocations, if lower), it runs. */
        size[i] = min_u32(max[i], inv);
        ASSERT_OK(create_sized(d, "at_limit", size[0], size[1], size[2], &k));
        expect_coords(d, k, size[0], size[1], size[2]);
        ASSERT_OK(cubec_kernel_destroy(d, k));
    }
    /* Twice the invocations, each dimension within its limit. */
    uint32_t x = min_u32(max[0], inv);
    snprintf(want, sizeof want,
             "kernel 'many': a workgroup of %u x 2 x 1 = %" PRIu64
             " invocations exceeds the device limit of %u (maxComputeWorkGroupInvocations)",
             x, (uint64_t)x * 2, inv);
    if ((uint64_t)x * 2 > inv)
        ASSERT_ERROR(create_sized(d, "many", x, 2, 1, &k), CUBEC_UNSUPPORTED, want);
    /* Exactly the invocations, spread over three dimensions. */
    if (inv % 4 == 0 && inv / 4 <= max[0] && max[1] >= 2 && max[2] >= 2) {
        ASSERT_OK(create_sized(d, "cube", inv / 4, 2, 2, &k));
        expect_coords(d, k, inv / 4, 2, 2);
        ASSERT_OK(cubec_kernel_destroy(d, k));
    }
    test_device_close(d);
}

/* Each workgroup fills the whole shared array, then reads both of its ends. */
static const char shared_src[] = "#version 450\n"
                                 "layout(local_size_x = 64) in;\n"
                                 "layout(std430, binding = 0) writeonly buffer O { uint o[]; };\n"
                                 "shared uint tile[N];\n"
                                 "void main() {\n"
                                 "  uint t = gl_LocalInvocationID.x, g = gl_WorkGroupID.x;\n"
                                 "  for (uint j = t; j < N; j += 64u) tile[j] = j * 7u + g;\n"
                                 "  barrier();\n"
                                 "  o[g * 64u + t] = tile[N - 1u - t] + tile[t];\n"
                                 "}\n";

static cubec_status create_shared(cubec_device *d, const char *name, uint32_t n, cubec_kernel *k)
{
    char value[32];
    snprintf(value, sizeof value, "%uu", n);
    cubec_define def = {"N", value};
    return create_glsl(d, name, shared_src, &def, 1, NULL, k);
}

/* The shared memory of the module against maxComputeSharedMemorySize (32 KiB on lavapipe). */
static void test_shared_memory(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    uint32_t limit = info.max_shared_memory_size, n = limit / 4;
    cubec_kernel k = {7};
    char want[256];
    snprintf(want, sizeof want,
             "kernel 'tile': %u bytes of shared (Workgroup) memory exceed the device limit of %u "
             "bytes (maxComputeSharedMemorySize)",
             (n + 1) * 4, limit);
    ASSERT_ERROR(create_shared(d, "tile", n + 1, &k), CUBEC_UNSUPPORTED, want);
    assert_int_equal(k.id, 0);
    /* 256 MiB, which lavapipe ran before. */
    ASSERT_ERROR(create_shared(d, "huge", 64u << 20, &k), CUBEC_UNSUPPORTED,
                 "kernel 'huge': 268435456 bytes of shared (Workgroup) memory exceed the device "
                 "limit");
    /* Exactly the limit. */
    ASSERT_OK(create_shared(d, "tile", n, &k));
    uint32_t want_out[4 * 64];
    for (uint32_t g = 0; g < 4; g++)
        for (uint32_t t = 0; t < 64; t++)
            want_out[g * 64 + t] = ((n - 1 - t) * 7u + g) + (t * 7u + g);
    run_and_check(d, k, 4, NULL, 0, want_out, 4 * 64);
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

/* A push-constant block of the source's own: up to the limit it is pushed; past it, cubec moves it
 * to a buffer (issue 24; before, it was refused), and the launch passes the same bytes. */
static const char push_src[] = "#version 450\n"
                               "layout(local_size_x = 64) in;\n"
                               "layout(std430, binding = 0) writeonly buffer O { uint o[]; };\n"
                               "layout(push_constant, std430) uniform P { uint v[N]; } p;\n"
                               "void main() {\n"
                               "  for (uint i = gl_LocalInvocationID.x; i < N; i += 64u)\n"
                               "    o[i] = p.v[i] * 3u + 1u;\n"
                               "}\n";

static void create_and_run_push(cubec_device *d, uint32_t n, int in_push)
{
    char value[32];
    snprintf(value, sizeof value, "%uu", n);
    cubec_define def = {"N", value};
    cubec_kernel k = {7};
    ASSERT_OK(create_glsl(d, "push", push_src, &def, 1, NULL, &k));
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k, &ki));
    assert_int_equal(ki.info_size, n * 4);
    assert_int_equal(ki.info_in_push_constants, in_push);
    uint32_t *v = malloc(n * 4), *want_out = malloc(n * 4);
    assert_non_null(v);
    assert_non_null(want_out);
    uint32_t seed = 11;
    for (uint32_t i = 0; i < n; i++) {
        v[i] = test_rand(&seed);
        want_out[i] = v[i] * 3u + 1u;
    }
    run_and_check(d, k, 1, v, n * 4, want_out, n);
    free(v);
    free(want_out);
    ASSERT_OK(cubec_kernel_destroy(d, k));
}

static void test_push_constants(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    uint32_t n = info.max_push_constants_size / 4;
    /* Exactly the limit: the launch's info bytes are the push constants. */
    create_and_run_push(d, n, 1);
    /* One word more: moved to a buffer at the metadata binding. */
    create_and_run_push(d, n + 1, 0);
    test_device_close(d);
}

/* Capabilities the device has not enabled: 64-bit atomics on shared memory need
 * shaderSharedInt64Atomics (never enabled), buffer device addresses are never enabled; 64-bit
 * atomics on a buffer need int64_atomics, which is enabled where the device has it. */
static void test_capabilities(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    cubec_kernel k = {7};
    static const char shared64_src[] =
        "#version 450\n"
        "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n"
        "#extension GL_EXT_shader_atomic_int64 : require\n"
        "layout(local_size_x = 64) in;\n"
        "layout(std430, binding = 0) buffer A { uint64_t a[]; };\n"
        "shared uint64_t total;\n"
        "void main() {\n"
        "  if (gl_LocalInvocationID.x == 0) total = 0ul;\n"
        "  barrier();\n"
        "  atomicAdd(total, 1ul);\n"
        "  barrier();\n"
        "  if (gl_LocalInvocationID.x == 0) a[0] = total;\n"
        "}\n";
    if (info.features & CUBEC_FEATURE_INT64)
        ASSERT_ERROR(create_glsl(d, "shared64", shared64_src, NULL, 0, NULL, &k), CUBEC_UNSUPPORTED,
                     "kernel 'shared64' needs SPIR-V capability Int64Atomics on shared "
                     "(Workgroup) memory, which needs the Vulkan feature shaderSharedInt64Atomics "
                     "that cubec does not enable on any device");
    else
        ASSERT_ERROR(create_glsl(d, "shared64", shared64_src, NULL, 0, NULL, &k), CUBEC_UNSUPPORTED,
                     "kernel 'shared64' needs SPIR-V capability Int64");
    assert_int_equal(k.id, 0);

    static const char bda_src[] = "#version 450\n"
                                  "#extension GL_EXT_buffer_reference : require\n"
                                  "layout(local_size_x = 64) in;\n"
                                  "layout(buffer_reference, std430) buffer P { uint v[]; };\n"
                                  "layout(std430, binding = 0) buffer A { P p; uint a[]; };\n"
                                  "void main() { a[0] = p.v[0]; }\n";
    /* Buffer device address is enabled where the device has it. */
    if (info.features & CUBEC_FEATURE_BUFFER_DEVICE_ADDRESS) {
        ASSERT_OK(create_glsl(d, "bda", bda_src, NULL, 0, NULL, &k));
        ASSERT_OK(cubec_kernel_destroy(d, k));
        k.id = 0;
    } else {
        ASSERT_ERROR(create_glsl(d, "bda", bda_src, NULL, 0, NULL, &k), CUBEC_UNSUPPORTED,
                     "kernel 'bda' needs SPIR-V capability PhysicalStorageBufferAddresses, which "
                     "needs the device feature buffer_device_address");
    }

    /* 64-bit atomics on a buffer: 256 invocations add their index + 1 and take the max. */
    static const char buffer64_src[] =
        "#version 450\n"
        "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n"
        "#extension GL_EXT_shader_atomic_int64 : require\n"
        "layout(local_size_x = 64) in;\n"
        "layout(std430, binding = 0) buffer A { uint64_t a[]; };\n"
        "void main() {\n"
        "  uint64_t i = uint64_t(gl_GlobalInvocationID.x);\n"
        "  atomicAdd(a[0], i + 1ul);\n"
        "  atomicMax(a[1], i << 33);\n"
        "}\n";
    const uint32_t needed = CUBEC_FEATURE_INT64 | CUBEC_FEATURE_INT64_ATOMICS;
    if ((info.features & needed) != needed) {
        ASSERT_ERROR(create_glsl(d, "buffer64", buffer64_src, NULL, 0, NULL, &k), CUBEC_UNSUPPORTED,
                     "kernel 'buffer64' needs SPIR-V capability Int64");
    } else {
        ASSERT_OK(create_glsl(d, "buffer64", buffer64_src, NULL, 0, NULL, &k));
        uint64_t acc[2] = {1000, 0};
        cubec_buffer a;
        ASSERT_OK(cubec_buffer_from(d, 0, acc, sizeof acc, &a));
        cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                                .kernel = k,
                                .buffers = &a,
                                .buffer_count = 1,
                                .groups = {4, 1, 1}};
        ASSERT_OK(cubec_launch(d, 0, &ld));
        ASSERT_OK(cubec_read(d, 0, a, 0, acc, sizeof acc));
        uint64_t sum = 1000, top = 0;
        for (uint64_t i = 0; i < 256; i++) {
            sum += i + 1;
            top = (i << 33) > top ? i << 33 : top;
        }
        assert_true(acc[0] == sum);
        assert_true(acc[1] == top);
        ASSERT_OK(cubec_buffer_release(d, a));
        ASSERT_OK(cubec_kernel_destroy(d, k));
    }
    test_device_close(d);
}

/* --- 3. Metadata ------------------------------------------------------------------------------ */

static const char info_src[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) writeonly buffer O { uint o[]; };\n"
    "CUBEC_INFO(uint v[N];)\n"
    "void main() {\n"
    "  for (uint i = gl_GlobalInvocationID.x; i < N; i += gl_NumWorkGroups.x * 64u)\n"
    "    o[i] = info.v[i] ^ 0x5a5a5a5au;\n"
    "}\n";

/* A metadata block over CUBEC_KERNEL_MAX_INFO_BYTES used to be accepted, then failed every
 * launch at sync (it does not fit the ring's chunk). At the limit, launches run; ten of them
 * with different metadata go round the ring (8 chunks) and each output is checked. */
static void test_metadata_limit(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    const uint32_t n = CUBEC_KERNEL_MAX_INFO_BYTES / 4;
    cubec_kernel k = {7};
    char value[32];
    snprintf(value, sizeof value, "%uu", n + 1);
    cubec_define def = {"N", value};
    ASSERT_ERROR(create_glsl(d, "bigmeta", info_src, &def, 1, NULL, &k), CUBEC_UNSUPPORTED,
                 "kernel 'bigmeta': metadata (info) block of 524292 bytes exceeds cubec's limit "
                 "of 524288 bytes (CUBEC_KERNEL_MAX_INFO_BYTES)");
    assert_int_equal(k.id, 0);

    snprintf(value, sizeof value, "%uu", n);
    ASSERT_OK(create_glsl(d, "meta", info_src, &def, 1, NULL, &k));
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k, &ki));
    assert_int_equal(ki.info_size, CUBEC_KERNEL_MAX_INFO_BYTES);
    assert_int_equal(ki.info_in_push_constants, 0);

    enum { LAUNCHES = 10 };
    uint32_t *v = malloc((size_t)LAUNCHES * CUBEC_KERNEL_MAX_INFO_BYTES);
    uint32_t *got = malloc(CUBEC_KERNEL_MAX_INFO_BYTES);
    assert_non_null(v);
    assert_non_null(got);
    uint32_t seed = 5;
    for (size_t i = 0; i < (size_t)LAUNCHES * n; i++)
        v[i] = test_rand(&seed);
    cubec_buffer out[LAUNCHES];
    for (int l = 0; l < LAUNCHES; l++) {
        ASSERT_OK(cubec_buffer_create(d, 0, CUBEC_KERNEL_MAX_INFO_BYTES, &out[l]));
        cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                                .kernel = k,
                                .buffers = &out[l],
                                .buffer_count = 1,
                                .info = v + (size_t)l * n,
                                .info_size = CUBEC_KERNEL_MAX_INFO_BYTES,
                                .groups = {64, 1, 1}};
        ASSERT_OK(cubec_launch(d, 0, &ld));
        /* The launch's size must be the kernel's: one more is refused, naming it. */
        ld.info_size = CUBEC_KERNEL_MAX_INFO_BYTES + 4;
        ASSERT_ERROR(cubec_launch(d, 0, &ld), CUBEC_INVALID_ARGUMENT,
                     "desc->info_size is 524292 but kernel 'meta' declares 524288 bytes");
    }
    for (int l = 0; l < LAUNCHES; l++) {
        ASSERT_OK(cubec_read(d, 0, out[l], 0, got, CUBEC_KERNEL_MAX_INFO_BYTES));
        const uint32_t *in = v + (size_t)l * n;
        for (uint32_t i = 0; i < n; i++)
            if (got[i] != (in[i] ^ 0x5a5a5a5au))
                fail_msg("launch %d, element %u: 0x%08x, expected 0x%08x", l, i, got[i],
                         in[i] ^ 0x5a5a5a5au);
        ASSERT_OK(cubec_buffer_release(d, out[l]));
    }
    ASSERT_OK(cubec_sync(d, 0));
    free(v);
    free(got);
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

/* --- 4. Entry points -------------------------------------------------------------------------- */

static const char two_kernels_src[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) writeonly buffer O { uint o[]; };\n"
    "void scale() { o[gl_GlobalInvocationID.x] = gl_GlobalInvocationID.x * 2u; }\n"
    "void add() { o[gl_GlobalInvocationID.x] = gl_GlobalInvocationID.x + 100u; }\n";

static void expect_add(cubec_device *d, cubec_kernel k)
{
    uint32_t want[128];
    for (uint32_t i = 0; i < 128; i++)
        want[i] = i + 100u;
    run_and_check(d, k, 2, NULL, 0, want, 128);
}

/* An entry point that names no function: GLSL used to run main instead. */
static void test_entry_points(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_kernel k = {7};
    ASSERT_ERROR(create_glsl(d, "ep", five_src, NULL, 0, "nothere", &k), CUBEC_COMPILE_FAILED,
                 "kernel 'ep': entry_point 'nothere' names no function of the GLSL source");
    assert_int_equal(k.id, 0);
    ASSERT_ERROR(create_glsl(d, "ep", two_kernels_src, NULL, 0, "nothere", &k),
                 CUBEC_COMPILE_FAILED, "(no function named by entry_point 'nothere' was found)");
    /* A function of the source, and main, still work. */
    ASSERT_OK(create_glsl(d, "add", two_kernels_src, NULL, 0, "add", &k));
    expect_add(d, k);
    ASSERT_OK(cubec_kernel_destroy(d, k));
    ASSERT_OK(create_glsl(d, "five", five_src, NULL, 0, "main", &k));
    expect_five(d, k);
    ASSERT_OK(cubec_kernel_destroy(d, k));

    /* SPIR-V: an OpEntryPoint of that name with the GLCompute model must exist. */
    spirv m = compile(two_kernels_src, "add");
    ASSERT_ERROR(create_spirv(d, "spv", &m, "nothere", &k), CUBEC_INVALID_SPIRV,
                 "kernel 'spv': SPIR-V module has no GLCompute entry point named 'nothere' "
                 "(entry points: 'add')");
    ASSERT_ERROR(create_spirv(d, "spv", &m, NULL, &k), CUBEC_INVALID_SPIRV,
                 "no GLCompute entry point named 'main'");
    ASSERT_OK(create_spirv(d, "spv", &m, "add", &k));
    expect_add(d, k);
    ASSERT_OK(cubec_kernel_destroy(d, k));
    free(m.words);
    test_device_close(d);
}

/* --- 5. Source size --------------------------------------------------------------------------- */

/* five_src followed by comment lines up to exactly `bytes` bytes. */
static char *padded_glsl(size_t bytes)
{
    size_t len = strlen(five_src);
    assert_true(bytes > len + 4);
    char *src = malloc(bytes + 1);
    assert_non_null(src);
    memcpy(src, five_src, len);
    while (len < bytes) {
        size_t line = bytes - len < 100 ? bytes - len : 100;
        memset(src + len, 'x', line);
        if (line >= 3) {
            src[len] = '/';
            src[len + 1] = '/';
        } else {
            memset(src + len, ' ', line);
        }
        src[len + line - 1] = '\n';
        len += line;
    }
    src[bytes] = '\0';
    assert_int_equal(strlen(src), bytes);
    return src;
}

/* The five kernel's SPIR-V padded with OpSourceExtension instructions to exactly `words`. */
static spirv padded_spirv(size_t words)
{
    spirv m = compile(five_src, "main");
    size_t at = find_instruction(&m, SPIRV_OP_SOURCE, UINT32_MAX);
    assert_true(at > 0);
    at += m.words[at] >> 16;
    assert_true(words > m.count + 2);
    uint32_t *w = malloc(words * sizeof *w);
    assert_non_null(w);
    memcpy(w, m.words, at * sizeof *w);
    size_t pad = words - m.count, put = at;
    while (pad > 0) {
        size_t n = pad < 0xffffu ? pad : 0xffffu;
        if (pad - n == 1) n--; /* leave at least two words for the last instruction */
        w[put] = (uint32_t)(n << 16) | SPIRV_OP_SOURCE_EXTENSION;
        memset(&w[put + 1], 'a', (n - 1) * sizeof *w);
        w[put + n - 1] = 0x00616161u; /* "aaa\0": the string ends in its last word */
        put += n;
        pad -= n;
    }
    memcpy(&w[put], &m.words[at], (m.count - at) * sizeof *w);
    free(m.words);
    spirv out = {w, words};
    return out;
}

static void test_source_size(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_kernel k = {7};
    char want[256];

    char *src = padded_glsl(CUBEC_KERNEL_MAX_SOURCE_BYTES + 1);
    snprintf(want, sizeof want,
             "cubec_kernel_create: desc->glsl is %u bytes long, more than the limit of %u bytes "
             "([kernel] max_source_bytes, CUBEC_MAX_SOURCE_BYTES)",
             CUBEC_KERNEL_MAX_SOURCE_BYTES + 1, CUBEC_KERNEL_MAX_SOURCE_BYTES);
    ASSERT_ERROR(create_glsl(d, "long", src, NULL, 0, NULL, &k), CUBEC_INVALID_ARGUMENT, want);
    assert_int_equal(k.id, 0);
    free(src);
    src = padded_glsl(CUBEC_KERNEL_MAX_SOURCE_BYTES);
    ASSERT_OK(create_glsl(d, "long", src, NULL, 0, NULL, &k));
    expect_five(d, k);
    ASSERT_OK(cubec_kernel_destroy(d, k));
    free(src);

    const size_t max_words = CUBEC_KERNEL_MAX_SOURCE_BYTES / 4;
    spirv m = padded_spirv(max_words + 1);
    snprintf(want, sizeof want,
             "cubec_kernel_create: desc->spirv_words is %zu, more than the limit of %zu words "
             "(%u bytes: [kernel] max_source_bytes, CUBEC_MAX_SOURCE_BYTES)",
             max_words + 1, max_words, CUBEC_KERNEL_MAX_SOURCE_BYTES);
    ASSERT_ERROR(create_spirv(d, "long", &m, NULL, &k), CUBEC_INVALID_ARGUMENT, want);
    /* A count that would overflow a byte size is refused without reading the words. */
    spirv lie = {m.words, SIZE_MAX};
    ASSERT_ERROR(create_spirv(d, "lie", &lie, NULL, &k), CUBEC_INVALID_ARGUMENT,
                 "desc->spirv_words is 18446744073709551615");
    free(m.words);
    m = padded_spirv(max_words);
    ASSERT_OK(create_spirv(d, "long", &m, NULL, &k));
    expect_five(d, k);
    ASSERT_OK(cubec_kernel_destroy(d, k));
    free(m.words);
    test_device_close(d);
}

/* The limit is the device's [kernel] max_source_bytes: a lower one refuses a source the default
 * accepts, naming the option, and a source at the limit still compiles and runs. */
static void test_source_size_configured(void **state)
{
    (void)state;
    const unsigned limit = 4096;
    char text[32];
    snprintf(text, sizeof text, "%u", limit);
    setenv("CUBEC_MAX_SOURCE_BYTES", text, 1);
    cubec_device *d = test_device_open();
    unsetenv("CUBEC_MAX_SOURCE_BYTES");
    cubec_kernel k = {7};
    char want[256];
    char *src = padded_glsl(limit + 1);
    snprintf(want, sizeof want,
             "cubec_kernel_create: desc->glsl is %u bytes long, more than the limit of %u bytes "
             "([kernel] max_source_bytes, CUBEC_MAX_SOURCE_BYTES)",
             limit + 1, limit);
    ASSERT_ERROR(create_glsl(d, "long", src, NULL, 0, NULL, &k), CUBEC_INVALID_ARGUMENT, want);
    assert_int_equal(k.id, 0);
    free(src);
    src = padded_glsl(limit);
    ASSERT_OK(create_glsl(d, "long", src, NULL, 0, NULL, &k));
    expect_five(d, k);
    ASSERT_OK(cubec_kernel_destroy(d, k));
    free(src);
    test_device_close(d);
    /* Out of its range the option fails the open, naming it. */
    setenv("CUBEC_MAX_SOURCE_BYTES", "100", 1);
    cubec_device *bad = NULL;
    ASSERT_ERROR(cubec_device_open(NULL, &bad), CUBEC_INVALID_ARGUMENT, "CUBEC_MAX_SOURCE_BYTES");
    unsetenv("CUBEC_MAX_SOURCE_BYTES");
    assert_null(bad);
}

static int setup(void **state)
{
    (void)state;
    cubec_status s = glsl_compiler_create(&compiler);
    if (s) {
        fprintf(stderr, "glsl_compiler_create: %s\n", cubec_status_message(s));
        cubec_status_free(s);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    glsl_compiler_destroy(compiler);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spirv_validated),        cmocka_unit_test(test_workgroup_size),
        cmocka_unit_test(test_shared_memory),          cmocka_unit_test(test_push_constants),
        cmocka_unit_test(test_capabilities),           cmocka_unit_test(test_metadata_limit),
        cmocka_unit_test(test_entry_points),           cmocka_unit_test(test_source_size),
        cmocka_unit_test(test_source_size_configured),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
