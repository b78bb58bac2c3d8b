/* Device capabilities (issue 14, outcome 3): what cubec_device_get_info reports agrees with
 * cubec_device_peek, and kernels that need a capability the device lacks or the configuration
 * turned off are refused with CUBEC_UNSUPPORTED naming it, before any Vulkan object is made
 * (the validation layer stays silent), on lavapipe as on a GPU. Kernels that use enabled
 * features run against the CPU: subgroup sums and inclusive prefix sums (each subgroup formed from
 * the ids the kernel reports, of the reported size), loads and stores through buffer device
 * addresses from cubec_buffer_raw passed in the metadata (into a view, the bytes around it
 * untouched), and 8- and 16-bit integer arithmetic; where the device lacks one, the kernel must
 * be refused naming its capability.
 *
 * Before this change cubec enabled neither buffer device address nor cooperative matrices: the
 * kernels below were refused as needing "a Vulkan feature or extension that cubec does not
 * enable on any device", a KHR cooperative-matrix module was refused as invalid SPIR-V by the
 * validator (which predates it), and the info had no subgroup size range or matrix shapes. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cubec_device_info peek_of(const cubec_device_info *opened)
{
    uint32_t count = 0;
    ASSERT_OK(cubec_device_get_count(&count));
    cubec_device_info peeked = CUBEC_DEVICE_INFO_INIT;
    for (uint32_t i = 0; i < count; i++) {
        ASSERT_OK(cubec_device_peek(i, &peeked));
        if (strcmp(peeked.name, opened->name) == 0) return peeked;
    }
    fail_msg("device '%s' is not among the %u peeked", opened->name, count);
    return peeked;
}

/* The query: what the open device enabled is what peek says it has (nothing is disabled here),
 * the subgroup size lies in its range, every feature bit has a name, and each matrix shape
 * belongs to an enabled extension. */
static void test_info_matches_peek(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    cubec_device_info peeked = peek_of(&info);
    assert_int_equal(info.features, peeked.features);
    assert_int_equal(info.min_subgroup_size, peeked.min_subgroup_size);
    assert_int_equal(info.max_subgroup_size, peeked.max_subgroup_size);
    assert_true(info.min_subgroup_size >= 1);
    assert_true(info.min_subgroup_size <= info.subgroup_size);
    assert_true(info.subgroup_size <= info.max_subgroup_size);
    assert_int_equal(info.matrix_shape_count, peeked.matrix_shape_count);
    assert_true(info.matrix_shape_count <= CUBEC_MAX_MATRIX_SHAPES);
    assert_memory_equal(info.matrix_shapes, peeked.matrix_shapes,
                        info.matrix_shape_count * sizeof info.matrix_shapes[0]);
    for (uint32_t bit = 1; bit; bit <<= 1)
        if (info.features & bit)
            assert_string_not_equal(cubec_feature_name((cubec_feature)bit), "unknown");
    for (uint32_t i = 0; i < info.matrix_shape_count; i++) {
        const cubec_matrix_shape *s = &info.matrix_shapes[i];
        uint32_t needs =
            s->nv ? CUBEC_FEATURE_COOPERATIVE_MATRIX_NV : CUBEC_FEATURE_COOPERATIVE_MATRIX;
        assert_true(info.features & needs);
        assert_true(s->m > 0 && s->n > 0 && s->k > 0);
    }
    /* Where the device has subgroup size control, the range comes from it: lavapipe's is 8..8,
     * a GPU's wider; without it, the range is the one size. */
    if (!(info.features & CUBEC_FEATURE_SUBGROUP_SIZE_CONTROL)) {
        assert_int_equal(info.min_subgroup_size, info.subgroup_size);
        assert_int_equal(info.max_subgroup_size, info.subgroup_size);
    }
    test_device_close(d);
}

/* Words of a module: header, then instructions appended with emit / emit_string. */
typedef struct words {
    uint32_t w[128];
    size_t n;
} words;

static void emit(words *m, uint32_t opcode, const uint32_t *ops, uint32_t count)
{
    m->w[m->n++] = ((count + 1) << 16) | opcode;
    for (uint32_t i = 0; i < count; i++)
        m->w[m->n++] = ops[i];
}

/* An instruction whose operands are `before` then a nul-terminated string. */
static void emit_string(words *m, uint32_t opcode, const uint32_t *before, uint32_t count,
                        const char *s)
{
    uint32_t ops[32] = {0};
    if (count) memcpy(ops, before, count * sizeof *ops);
    size_t len = strlen(s) + 1;
    memcpy(ops + count, s, len);
    emit(m, opcode, ops, count + (uint32_t)((len + 3) / 4));
}

/* The smallest compute kernel that declares CooperativeMatrixKHR (6022): the capability alone
 * decides. glslang and SPIRV-Tools of Debian 12 know neither the capability nor
 * GL_KHR_cooperative_matrix, so the words are written here. */
static words khr_cooperative_matrix_module(void)
{
    enum { VOID = 1, FN, MAIN, LABEL, BOUND };
    words m = {{0x07230203u, 0x00010500u, 0, BOUND, 0}, 5};
    emit(&m, 17, (uint32_t[]){1}, 1);    /* OpCapability Shader */
    emit(&m, 17, (uint32_t[]){6022}, 1); /* OpCapability CooperativeMatrixKHR */
    emit(&m, 17, (uint32_t[]){5345}, 1); /* OpCapability VulkanMemoryModel */
    emit_string(&m, 10, NULL, 0, "SPV_KHR_cooperative_matrix");
    emit(&m, 14, (uint32_t[]){0, 3}, 2);                   /* OpMemoryModel Logical Vulkan */
    emit_string(&m, 15, (uint32_t[]){5, MAIN}, 2, "main"); /* OpEntryPoint GLCompute */
    emit(&m, 16, (uint32_t[]){MAIN, 17, 32, 1, 1}, 5);     /* OpExecutionMode LocalSize */
    emit(&m, 19, (uint32_t[]){VOID}, 1);                   /* OpTypeVoid */
    emit(&m, 33, (uint32_t[]){FN, VOID}, 2);               /* OpTypeFunction */
    emit(&m, 54, (uint32_t[]){VOID, MAIN, 0, FN}, 4);      /* OpFunction */
    emit(&m, 248, (uint32_t[]){LABEL}, 1);                 /* OpLabel */
    emit(&m, 253, NULL, 0);                                /* OpReturn */
    emit(&m, 56, NULL, 0);                                 /* OpFunctionEnd */
    return m;
}

static const char nv_src[] =
    "#version 450\n"
    "#extension GL_NV_cooperative_matrix : require\n"
    "#extension GL_KHR_memory_scope_semantics : require\n"
    "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n"
    "layout(local_size_x = 32) in;\n"
    "layout(std430, binding = 0) readonly buffer A { float16_t a[]; };\n"
    "layout(std430, binding = 1) writeonly buffer C { float c[]; };\n"
    "void main() {\n"
    "  fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> m;\n"
    "  coopMatLoadNV(m, a, 0, 16, false);\n"
    "  fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> acc =\n"
    "      fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);\n"
    "  acc = coopMatMulAddNV(m, m, acc);\n"
    "  coopMatStoreNV(acc, c, 0, 16, false);\n"
    "}\n";

static const char bda_src[] = "#version 450\n"
                              "#extension GL_EXT_buffer_reference : require\n"
                              "layout(local_size_x = 64) in;\n"
                              "layout(buffer_reference, std430) buffer P { uint v[]; };\n"
                              "layout(std430, binding = 0) buffer A { P p; uint a[]; };\n"
                              "void main() { a[0] = p.v[0]; }\n";

/* Cooperative matrices, KHR (SPIR-V words) and NV (GLSL): refused naming the capability and the
 * feature where the device lacks them, as lavapipe does. */
static void test_cooperative_matrix(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    words m = khr_cooperative_matrix_module();
    cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "coop", .spirv = m.w, .spirv_words = m.n};
    cubec_kernel k = {0};
    char want[512];
    if (info.features & CUBEC_FEATURE_COOPERATIVE_MATRIX) {
        /* The capability passes; the validator of Debian 12 then refuses what it does not know
         * (docs/kernels.md, "Cooperative matrices"). */
        ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_INVALID_SPIRV,
                     "SPIR-V validation failed");
    } else {
        snprintf(want, sizeof want,
                 "kernel 'coop' needs SPIR-V capability CooperativeMatrixKHR, which needs the "
                 "device feature cooperative_matrix (Vulkan VK_KHR_cooperative_matrix "
                 "cooperativeMatrix): device '%s' lacks it",
                 info.name);
        ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_UNSUPPORTED, want);
    }
    assert_int_equal(k.id, 0);

    cubec_kernel_desc nv = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "coop_nv", .glsl = nv_src};
    if (info.features & CUBEC_FEATURE_COOPERATIVE_MATRIX_NV) {
        ASSERT_OK(cubec_kernel_create(d, &nv, &k));
        ASSERT_OK(cubec_kernel_destroy(d, k));
    } else {
        /* The kernel needs float16, 16-bit storage and the Vulkan memory model too: where the
         * device has them (lavapipe), cooperative_matrix_nv is the refusal; where it lacks one
         * (the webgpu backend, which enables no optional feature), that one comes first and
         * CooperativeMatrixNV is among the "also refused". */
        const uint64_t others = CUBEC_FEATURE_FLOAT16 | CUBEC_FEATURE_STORAGE_BUFFER_16BIT |
                                CUBEC_FEATURE_VULKAN_MEMORY_MODEL;
        if ((info.features & others) == others)
            snprintf(want, sizeof want,
                     "kernel 'coop_nv' needs SPIR-V capability CooperativeMatrixNV, which needs "
                     "the device feature cooperative_matrix_nv (Vulkan VK_NV_cooperative_matrix "
                     "cooperativeMatrix): device '%s' lacks it",
                     info.name);
        else
            snprintf(want, sizeof want, "device '%s' lacks it (also refused: ", info.name);
        cubec_status st = cubec_kernel_create(d, &nv, &k);
        const char *msg = cubec_status_message(st);
        if (cubec_status_code(st) != CUBEC_UNSUPPORTED || !strstr(msg, want) ||
            !strstr(msg, "CooperativeMatrixNV"))
            fail_msg("kernel 'coop_nv': %s \"%s\"; expected CUBEC_UNSUPPORTED with \"%s\" and "
                     "CooperativeMatrixNV",
                     cubec_code_name(cubec_status_code(st)), msg, want);
        cubec_status_free(st);
        assert_int_equal(k.id, 0);
    }
    test_device_close(d);
}

/* CUBEC_DISABLE_FEATURES turns the new features off like the old ones: they leave the info
 * (the matrix shapes of a disabled extension too), and a kernel needing one is refused saying
 * it was turned off. Where the device has buffer device address (lavapipe does), the kernel is
 * accepted with it on. */
static void test_disabled_by_config(void **state)
{
    (void)state;
    const uint32_t off = CUBEC_FEATURE_BUFFER_DEVICE_ADDRESS | CUBEC_FEATURE_SUBGROUP_SIZE_CONTROL |
                         CUBEC_FEATURE_INTEGER_DOT_PRODUCT | CUBEC_FEATURE_COOPERATIVE_MATRIX |
                         CUBEC_FEATURE_COOPERATIVE_MATRIX_NV | CUBEC_FEATURE_BFLOAT16;
    setenv("CUBEC_DISABLE_FEATURES",
           "buffer_device_address, subgroup_size_control, integer_dot_product, "
           "cooperative_matrix, cooperative_matrix_nv, bfloat16",
           1);
    cubec_device *d = test_device_open();
    unsetenv("CUBEC_DISABLE_FEATURES");
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    cubec_device_info peeked = peek_of(&info);
    uint32_t gone = off | CUBEC_FEATURE_BFLOAT16_DOT_PRODUCT |
                    CUBEC_FEATURE_BFLOAT16_COOPERATIVE_MATRIX; /* they need bfloat16 */
    assert_int_equal(info.features & gone, 0);
    assert_int_equal(info.features, peeked.features & ~gone);
    assert_int_equal(info.matrix_shape_count, 0);

    cubec_kernel k = {0};
    cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "bda", .glsl = bda_src};
    char want[512];
    if (peeked.features & CUBEC_FEATURE_BUFFER_DEVICE_ADDRESS) {
        snprintf(want, sizeof want,
                 "kernel 'bda' needs SPIR-V capability PhysicalStorageBufferAddresses, which "
                 "needs the device feature buffer_device_address (Vulkan bufferDeviceAddress): "
                 "it is turned off on device '%s' by [device] disable_features",
                 info.name);
        ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_UNSUPPORTED, want);
    } else {
        ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_UNSUPPORTED, "lacks it");
    }
    assert_int_equal(k.id, 0);
    test_device_close(d);

    d = test_device_open();
    ASSERT_OK(cubec_device_get_info(d, &info));
    if (info.features & CUBEC_FEATURE_BUFFER_DEVICE_ADDRESS) {
        ASSERT_OK(cubec_kernel_create(d, &kd, &k));
        ASSERT_OK(cubec_kernel_destroy(d, k));
    }
    test_device_close(d);
}

/* ---- Kernels that use the features, against the CPU ----------------------------------------
 * Where the device reports the feature the kernel must run and agree with the CPU; where it does
 * not, its creation must be refused with CUBEC_UNSUPPORTED naming the capability (never a silent
 * skip). float16 arithmetic and 8- and 16-bit storage run in tests/vulkan/test_small_types.c,
 * 64-bit arithmetic with 64-bit atomics in tests/vulkan/test_kernel_limits.c. */

/* Asserts that the kernel is refused for the SPIR-V capability `cap` the device lacks. */
static void expect_refused(cubec_device *d, const cubec_kernel_desc *kd, const char *cap)
{
    char want[128];
    snprintf(want, sizeof want, "kernel '%s' needs SPIR-V capability %s", kd->name, cap);
    cubec_kernel k = {0};
    ASSERT_ERROR(cubec_kernel_create(d, kd, &k), CUBEC_UNSUPPORTED, want);
    assert_int_equal(k.id, 0);
}

/* Runs kernel `kd` once over `groups` workgroups, binding 0 uploaded from `in`, binding 1 read
 * back into `out`, metadata {n}; the kernel and buffers go afterwards. */
static void run_in_out(cubec_device *d, const cubec_kernel_desc *kd, const void *in,
                       size_t in_bytes, void *out, size_t out_bytes, uint32_t n, uint32_t groups)
{
    cubec_buffer b[2];
    ASSERT_OK(cubec_buffer_from(d, 0, in, in_bytes, &b[0]));
    ASSERT_OK(cubec_buffer_create(d, 0, out_bytes, &b[1]));
    cubec_kernel k;
    ASSERT_OK(cubec_kernel_create(d, kd, &k));
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = k,
                            .buffers = b,
                            .buffer_count = 2,
                            .info = &n,
                            .info_size = sizeof n,
                            .groups = {groups, 1, 1}};
    ASSERT_OK(cubec_launch(d, 0, &ld));
    ASSERT_OK(cubec_read(d, 0, b[1], 0, out, out_bytes));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    ASSERT_OK(cubec_buffer_release(d, b[0]));
    ASSERT_OK(cubec_buffer_release(d, b[1]));
}

/* The sum over each subgroup and the inclusive prefix sum in it, with where each invocation ran
 * (subgroup and lane) so that the CPU can form the same subgroups without assuming how the
 * driver lays them out. */
static const char subgroup_src[] =
    "#version 450\n"
    "#extension GL_KHR_shader_subgroup_arithmetic : require\n"
    "layout(local_size_x = 128) in;\n"
    "layout(std430, binding = 0) readonly buffer X { uint x[]; };\n"
    "layout(std430, binding = 1) writeonly buffer S { uvec4 s[]; };\n"
    "CUBEC_INFO(uint n;)\n"
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  uint v = i < info.n ? x[i] : 0u;\n"
    "  uint total = subgroupAdd(v);\n"
    "  uint prefix = subgroupInclusiveAdd(v);\n"
    "  if (i < info.n)\n"
    "    s[i] = uvec4(total, prefix, gl_WorkGroupID.x * gl_NumSubgroups + gl_SubgroupID,\n"
    "                 gl_SubgroupInvocationID | (gl_SubgroupSize << 16));\n"
    "}\n";

enum { SG_N = 128 * 8 };

static void test_subgroup_arithmetic(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "subgroup_sums", .glsl = subgroup_src};
    if (!(info.features & CUBEC_FEATURE_SUBGROUP_ARITHMETIC)) {
        expect_refused(d, &kd, "GroupNonUniformArithmetic");
        test_device_close(d);
        return;
    }
    /* Whole subgroups: the workgroup is a multiple of every power of two up to 128. */
    const uint32_t size = info.subgroup_size;
    assert_true(size >= 1 && size <= 128 && 128 % size == 0);
    static uint32_t x[SG_N], s[SG_N][4];
    uint32_t seed = 14;
    for (uint32_t i = 0; i < SG_N; i++)
        x[i] = test_rand(&seed); /* sums wrap mod 2^32 alike on both sides */
    run_in_out(d, &kd, x, sizeof x, s, sizeof s, SG_N, SG_N / 128);
    /* The CPU's subgroups: invocations by subgroup, each at its lane. */
    const uint32_t groups = SG_N / size;
    static int32_t member[SG_N]; /* [subgroup * size + lane]: the invocation, or -1 */
    for (uint32_t i = 0; i < SG_N; i++)
        member[i] = -1;
    for (uint32_t i = 0; i < SG_N; i++) {
        uint32_t sub = s[i][2], lane = s[i][3] & 0xffffu, seen = s[i][3] >> 16;
        if (seen != size)
            fail_msg("invocation %u ran with gl_SubgroupSize %u; the device reports %u", i, seen,
                     size);
        if (sub >= groups || lane >= size || member[sub * size + lane] >= 0)
            fail_msg("invocation %u: subgroup %u lane %u is out of range or taken", i, sub, lane);
        member[sub * size + lane] = (int32_t)i;
    }
    for (uint32_t g = 0; g < groups; g++) {
        uint32_t total = 0, prefix = 0;
        for (uint32_t l = 0; l < size; l++)
            total += x[member[g * size + l]];
        for (uint32_t l = 0; l < size; l++) {
            uint32_t i = (uint32_t)member[g * size + l];
            prefix += x[i];
            if (s[i][0] != total || s[i][1] != prefix)
                fail_msg("subgroup %u lane %u: subgroupAdd %u, subgroupInclusiveAdd %u; the CPU "
                         "says %u and %u",
                         g, l, s[i][0], s[i][1], total, prefix);
        }
    }
    test_device_close(d);
}

/* Reads one buffer and writes another through their device addresses, given in the metadata, and
 * writes a bound buffer as usual: dst[i] = src[i] * mul + i, o[i] = ~src[i]. */
static const char address_src[] =
    "#version 450\n"
    "#extension GL_EXT_buffer_reference : require\n"
    "layout(local_size_x = 64) in;\n"
    "layout(buffer_reference, std430, buffer_reference_align = 4) buffer Words { uint v[]; };\n"
    "layout(std430, binding = 0) writeonly buffer O { uint o[]; };\n"
    "CUBEC_INFO(Words src; Words dst; uint n; uint mul;)\n"
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  if (i >= info.n) return;\n"
    "  uint x = info.src.v[i];\n"
    "  info.dst.v[i] = x * info.mul + i;\n"
    "  o[i] = ~x;\n"
    "}\n";

typedef struct address_info {
    uint64_t src, dst;
    uint32_t n, mul;
} address_info;

enum { BDA_N = 1000, BDA_PAD = 256 /* bytes before the destination view */ };

static void test_buffer_device_address(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "addresses", .glsl = address_src};
    static uint32_t x[BDA_N], big[BDA_N + 2 * BDA_PAD / 4], got[BDA_N];
    uint32_t seed = 21;
    for (uint32_t i = 0; i < BDA_N; i++)
        x[i] = test_rand(&seed);
    for (uint32_t i = 0; i < BDA_N + 2 * BDA_PAD / 4; i++)
        big[i] = 0xa5a50000u + i;
    cubec_buffer src, whole, dst, o;
    ASSERT_OK(cubec_buffer_from(d, 0, x, sizeof x, &src));
    ASSERT_OK(cubec_buffer_from(d, 0, big, sizeof big, &whole));
    assert_int_equal(BDA_PAD % info.storage_offset_alignment, 0);
    ASSERT_OK(cubec_buffer_view(d, whole, BDA_PAD, sizeof x, &dst));
    ASSERT_OK(cubec_buffer_create(d, 0, sizeof x, &o));
    cubec_raw_buffer raw_src = CUBEC_RAW_BUFFER_INIT, raw_dst = CUBEC_RAW_BUFFER_INIT;
    cubec_guard g_src, g_dst;
    ASSERT_OK(cubec_buffer_raw(d, 0, src, &raw_src, &g_src));
    ASSERT_OK(cubec_buffer_raw(d, 0, dst, &raw_dst, &g_dst));
    assert_int_equal(raw_dst.size, sizeof x);
    if (!(info.features & CUBEC_FEATURE_BUFFER_DEVICE_ADDRESS)) {
        /* No kernel that needs an address; and no address where the device lacks the feature
         * (turned off by the configuration, Vulkan's feature stays on and addresses stay valid
         * for the program's own code: cubec.h, cubec_raw_buffer). */
        expect_refused(d, &kd, "PhysicalStorageBufferAddresses");
        if (!(peek_of(&info).features & CUBEC_FEATURE_BUFFER_DEVICE_ADDRESS))
            assert_true(raw_src.device_address == 0 && raw_dst.device_address == 0);
    } else {
        assert_true(raw_src.device_address != 0 && raw_dst.device_address != 0);
        assert_int_equal(raw_src.device_address % 4, 0);
        cubec_kernel k;
        ASSERT_OK(cubec_kernel_create(d, &kd, &k));
        cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
        ASSERT_OK(cubec_kernel_get_info(d, k, &ki));
        assert_int_equal(ki.info_size, sizeof(address_info));
        assert_int_equal(ki.binding_count, 1);
        const address_info ai = {raw_src.device_address, raw_dst.device_address, BDA_N,
                                 2654435761u};
        cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                                .kernel = k,
                                .buffers = &o,
                                .buffer_count = 1,
                                .info = &ai,
                                .info_size = sizeof ai,
                                .groups = {(BDA_N + 63) / 64, 1, 1}};
        ASSERT_OK(cubec_launch(d, 0, &ld));
        /* The reads below come after the launch although it binds neither guarded buffer
         * (tests/vulkan/test_raw_ordering.c): no sync needed. */
        ASSERT_OK(cubec_read(d, 0, o, 0, got, sizeof got));
        for (uint32_t i = 0; i < BDA_N; i++)
            assert_int_equal(got[i], ~x[i]);
        static uint32_t after[BDA_N + 2 * BDA_PAD / 4];
        ASSERT_OK(cubec_read(d, 0, whole, 0, after, sizeof after));
        for (uint32_t i = 0; i < BDA_N + 2 * BDA_PAD / 4; i++) {
            uint32_t at = i - BDA_PAD / 4; /* the view's word, when i lies in it */
            uint32_t want = i >= BDA_PAD / 4 && at < BDA_N ? x[at] * ai.mul + at : big[i];
            if (after[i] != want)
                fail_msg("word %u of the buffer (the view starts at word %u): %#x, expected %#x", i,
                         BDA_PAD / 4, after[i], want);
        }
        ASSERT_OK(cubec_kernel_destroy(d, k));
    }
    ASSERT_OK(cubec_guard_release(d, g_src));
    ASSERT_OK(cubec_guard_release(d, g_dst));
    ASSERT_OK(cubec_buffer_release(d, o));
    ASSERT_OK(cubec_buffer_release(d, dst));
    ASSERT_OK(cubec_buffer_release(d, whole));
    ASSERT_OK(cubec_buffer_release(d, src));
    test_device_close(d);
}

/* Arithmetic in T, 8 or 16 bits wide (the Int8 or Int16 capability, no narrow storage): three
 * words narrowed to T, then r = a * b + c and q = (a >> 1) ^ b, wrapping in T, widened back. */
static const char narrow_src[] =
    "#version 450\n"
    "#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require\n"
    "#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) readonly buffer X { uint x[]; };\n"
    "layout(std430, binding = 1) writeonly buffer Y { int y[]; };\n"
    "CUBEC_INFO(uint n;)\n"
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  if (i >= info.n) return;\n"
    "  T a = T(x[3u * i]), b = T(x[3u * i + 1u]), c = T(x[3u * i + 2u]);\n"
    "  T r = a * b + c;\n"
    "  T q = (a >> T(1)) ^ b;\n"
    "  y[2u * i] = int(r);\n"
    "  y[2u * i + 1u] = int(q);\n"
    "}\n";

/* The low `bits` bits of v as a signed number. */
static int32_t narrow(int64_t v, int bits)
{
    uint32_t u = (uint32_t)v & ((1u << bits) - 1u);
    return u >> (bits - 1) ? (int32_t)u - (int32_t)(1u << bits) : (int32_t)u;
}

enum { NARROW_N = 1000 };

static void run_narrow(cubec_device *d, const cubec_device_info *info, int bits)
{
    const cubec_define def = {"T", bits == 8 ? "int8_t" : "int16_t"};
    cubec_kernel_desc kd = {.struct_size = sizeof(cubec_kernel_desc),
                            .name = bits == 8 ? "int8" : "int16",
                            .glsl = narrow_src,
                            .defines = &def,
                            .define_count = 1};
    uint32_t feature = bits == 8 ? CUBEC_FEATURE_INT8 : CUBEC_FEATURE_INT16;
    if (!(info->features & feature)) {
        expect_refused(d, &kd, bits == 8 ? "Int8" : "Int16");
        return;
    }
    static uint32_t x[3 * NARROW_N];
    static int32_t y[2 * NARROW_N];
    uint32_t seed = 30 + (uint32_t)bits;
    for (uint32_t i = 0; i < 3 * NARROW_N; i++)
        x[i] = test_rand(&seed);
    run_in_out(d, &kd, x, sizeof x, y, sizeof y, NARROW_N, (NARROW_N + 63) / 64);
    for (uint32_t i = 0; i < NARROW_N; i++) {
        int32_t a = narrow(x[3 * i], bits), bb = narrow(x[3 * i + 1], bits),
                c = narrow(x[3 * i + 2], bits);
        int32_t r = narrow((int64_t)a * bb + c, bits);
        int32_t q =
            narrow((a >= 0 ? a / 2 : -((1 - a) / 2)) ^ bb, bits); /* a >> 1, rounding down */
        if (y[2 * i] != r || y[2 * i + 1] != q)
            fail_msg("%d-bit element %u (a %d, b %d, c %d): a * b + c = %d, (a >> 1) ^ b = %d; the "
                     "CPU says %d and %d",
                     bits, i, a, bb, c, y[2 * i], y[2 * i + 1], r, q);
    }
}

static void test_narrow_integer_arithmetic(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    run_narrow(d, &info, 8);
    run_narrow(d, &info, 16);
    test_device_close(d);
}

/* cubec_device_info.capabilities (0.2.14): each bit agrees with what its call does on the
 * device (set: the call succeeds; clear: CUBEC_UNSUPPORTED, or for the bits whose calls are never
 * refused, the other behaviour they name), with what each backend is documented to have
 * (docs/device.md, "The WebGPU backend"), and with cubec_device_peek. */
static const char texel_src[] = "#version 450\n"
                                "layout(local_size_x = 1) in;\n"
                                "layout(binding = 0) uniform samplerBuffer t;\n"
                                "layout(std430, binding = 1) buffer O { float o[]; };\n"
                                "void main() { o[0] = texelFetch(t, 0).x; }\n";
static const char wgsl_src[] = "@group(0) @binding(0) var<storage, read_write> o: array<u32>;\n"
                               "@compute @workgroup_size(1)\n"
                               "fn main() { o[0] = 42u; }\n";
static const char write_src[] = "#version 450\n"
                                "layout(local_size_x = 1) in;\n"
                                "layout(std430, binding = 0) buffer O { uint o[]; };\n"
                                "void main() { o[0] = 42u; }\n";

/* The status of creating kernel `kd`, the kernel destroyed again. */
static cubec_code kernel_code(cubec_device *d, const cubec_kernel_desc *kd)
{
    cubec_kernel k = {0};
    cubec_status st = cubec_kernel_create(d, kd, &k);
    cubec_code c = cubec_status_code(st);
    cubec_status_free(st);
    if (!c) ASSERT_OK(cubec_kernel_destroy(d, k));
    return c;
}

/* NULL (success) where `bit` is set, CUBEC_UNSUPPORTED where clear. */
static void expect_per_bit(const cubec_device_info *info, uint32_t bit, cubec_code got,
                           const char *call)
{
    cubec_code want = info->capabilities & bit ? CUBEC_OK : CUBEC_UNSUPPORTED;
    if (got != want)
        fail_msg("%s backend, %s %s: %s gave code %d, expected %d", info->backend,
                 cubec_capability_name(bit), info->capabilities & bit ? "set" : "clear", call,
                 (int)got, (int)want);
}

static void check_bits(cubec_device *d, const char *backend)
{
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    assert_string_equal(info.backend, backend);
    const uint32_t caps = info.capabilities;
    for (uint32_t bit = 1; bit; bit <<= 1)
        if (caps & bit) assert_string_not_equal(cubec_capability_name(bit), "unknown");
    /* What each backend is documented to have; the rest (host import, calibration, timestamps,
     * texel formats) depends on the Vulkan device. */
    uint32_t must = 0, never = 0;
    if (!strcmp(backend, "vulkan")) {
        must = CUBEC_CAPABILITY_PINNED_HOST_MEMORY | CUBEC_CAPABILITY_VULKAN_HANDLES |
               CUBEC_CAPABILITY_REUSABLE_GRAPHS | CUBEC_CAPABILITY_IMAGES |
               CUBEC_CAPABILITY_RUNS_KERNELS;
        never = CUBEC_CAPABILITY_WGSL;
    } else if (!strcmp(backend, "webgpu")) {
        must = CUBEC_CAPABILITY_WGSL | CUBEC_CAPABILITY_IMAGES | CUBEC_CAPABILITY_RUNS_KERNELS;
        never = CUBEC_CAPABILITY_PINNED_HOST_MEMORY | CUBEC_CAPABILITY_HOST_IMPORT |
                CUBEC_CAPABILITY_VULKAN_HANDLES | CUBEC_CAPABILITY_REUSABLE_GRAPHS |
                CUBEC_CAPABILITY_CALIBRATED_CLOCK | CUBEC_CAPABILITY_TEXEL_BUFFERS;
    } else if (!strcmp(backend, "null")) {
        must = CUBEC_CAPABILITY_PINNED_HOST_MEMORY | CUBEC_CAPABILITY_HOST_IMPORT |
               CUBEC_CAPABILITY_REUSABLE_GRAPHS | CUBEC_CAPABILITY_CALIBRATED_CLOCK |
               CUBEC_CAPABILITY_DEVICE_TIMESTAMPS | CUBEC_CAPABILITY_TEXEL_BUFFERS |
               CUBEC_CAPABILITY_IMAGES;
        never =
            CUBEC_CAPABILITY_VULKAN_HANDLES | CUBEC_CAPABILITY_WGSL | CUBEC_CAPABILITY_RUNS_KERNELS;
    } else
        fail_msg("unknown backend '%s'", backend);
    /* Every feature bit a backend reports is a feature with a name: `cubec info` would print
     * "unknown" for any other (the null backend once reported all 32 bits). */
    for (unsigned bit = 0; bit < 64; bit++)
        if ((info.features >> bit) & 1)
            if (!strcmp(cubec_feature_name((uint64_t)1 << bit), "unknown"))
                fail_msg("%s backend: feature bit %u is set but names no feature", backend, bit);
    if ((caps & must) != must || (caps & never))
        fail_msg("%s backend: capabilities 0x%x, expected all of 0x%x and none of 0x%x", backend,
                 caps, must, never);

    void *pinned = NULL;
    cubec_status st = cubec_host_alloc(d, 4096, &pinned);
    expect_per_bit(&info, CUBEC_CAPABILITY_PINNED_HOST_MEMORY, cubec_status_code(st),
                   "cubec_host_alloc");
    cubec_status_free(st);
    if (pinned) ASSERT_OK(cubec_host_free(d, pinned));

    cubec_vulkan_handles vh = CUBEC_VULKAN_HANDLES_INIT;
    st = cubec_device_get_vulkan_handles(d, &vh);
    expect_per_bit(&info, CUBEC_CAPABILITY_VULKAN_HANDLES, cubec_status_code(st),
                   "cubec_device_get_vulkan_handles");
    cubec_status_free(st);

    cubec_kernel_desc kd = {.struct_size = sizeof kd, .name = "texel", .glsl = texel_src};
    expect_per_bit(&info, CUBEC_CAPABILITY_TEXEL_BUFFERS, kernel_code(d, &kd),
                   "cubec_kernel_create(texel buffer)");
    kd = (cubec_kernel_desc){.struct_size = sizeof kd, .name = "wgsl", .wgsl = wgsl_src};
    expect_per_bit(&info, CUBEC_CAPABILITY_WGSL, kernel_code(d, &kd), "cubec_kernel_create(wgsl)");

    cubec_image_desc id = CUBEC_IMAGE_DESC_INIT;
    id.format = CUBEC_IMAGE_FORMAT_RGBA8_UNORM;
    id.width = id.height = 4;
    cubec_image im = {0};
    st = cubec_image_create(d, 0, &id, &im);
    expect_per_bit(&info, CUBEC_CAPABILITY_IMAGES, cubec_status_code(st), "cubec_image_create");
    cubec_status_free(st);
    ASSERT_OK(cubec_image_release(d, im));

    /* Registration is accepted either way (imported or staged): bytes round-trip through it. */
    size_t align = (size_t)info.host_register_alignment;
    unsigned char *host = aligned_alloc(align, align);
    assert_non_null(host);
    for (size_t i = 0; i < align; i++)
        host[i] = (unsigned char)(i * 7 + 1);
    ASSERT_OK(cubec_host_register(d, host, align));
    cubec_buffer b;
    ASSERT_OK(cubec_buffer_create(d, 0, align, &b));
    ASSERT_OK(cubec_write(d, 0, b, 0, host, align));
    memset(host, 0, align);
    ASSERT_OK(cubec_read(d, 0, b, 0, host, align));
    for (size_t i = 0; i < align; i++)
        assert_int_equal(host[i], (unsigned char)(i * 7 + 1));
    ASSERT_OK(cubec_host_unregister(d, host));
    free(host);

    /* A kernel's store lands exactly where kernels run; the null backend leaves the bytes. */
    kd = (cubec_kernel_desc){.struct_size = sizeof kd, .name = "store", .glsl = write_src};
    cubec_kernel k;
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    ASSERT_OK(cubec_fill(d, 0, b, 0, 4, 7));
    cubec_launch_desc ld = {.struct_size = sizeof ld,
                            .kernel = k,
                            .buffers = &b,
                            .buffer_count = 1,
                            .groups = {1, 1, 1}};
    ASSERT_OK(cubec_launch(d, 0, &ld));
    uint32_t word = 0;
    ASSERT_OK(cubec_read(d, 0, b, 0, &word, 4));
    assert_int_equal(word, caps & CUBEC_CAPABILITY_RUNS_KERNELS ? 42u : 7u);
    ASSERT_OK(cubec_kernel_destroy(d, k));
    ASSERT_OK(cubec_buffer_release(d, b));

    /* Device-timed profiles exactly where the device writes timestamps, unless the
     * configuration asks for host timing. */
    const char *timing = getenv("CUBEC_TIMING");
    if (!timing || strcmp(timing, "system") != 0) {
        cubec_timing method = 0;
        ASSERT_OK(cubec_profile_get_method(d, &method));
        assert_int_equal(method, caps & CUBEC_CAPABILITY_DEVICE_TIMESTAMPS ? CUBEC_TIMING_DEVICE
                                                                           : CUBEC_TIMING_SYSTEM);
    }
}

static void test_capability_bits(void **state)
{
    (void)state;
    const char *env = getenv("CUBEC_BACKEND");
    const char *backend = env && *env ? env : "vulkan";
    cubec_device *d = test_device_open();
    check_bits(d, backend);
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    cubec_device_info peeked = peek_of(&info);
    assert_string_equal(peeked.backend, info.backend);
    assert_int_equal(peeked.capabilities, info.capabilities);
    test_device_close(d);
    /* The null backend too, whichever backend this run is on. */
    cubec_device_desc desc = CUBEC_DEVICE_DESC_INIT;
    desc.backend = "null";
    cubec_device *n = NULL;
    ASSERT_OK(cubec_device_open(&desc, &n));
    check_bits(n, "null");
    cubec_device_close(n);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_info_matches_peek),
        cmocka_unit_test(test_cooperative_matrix),
        cmocka_unit_test(test_disabled_by_config),
        cmocka_unit_test(test_subgroup_arithmetic),
        cmocka_unit_test(test_buffer_device_address),
        cmocka_unit_test(test_narrow_integer_arithmetic),
        cmocka_unit_test(test_capability_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
