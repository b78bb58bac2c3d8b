/* Push constants as Vulkan allows them (issue 24, point 3): a launch's info_size larger than a
 * module's own push block (a C struct's tail padding) up to maxPushConstantsSize, and a push
 * block larger than maxPushConstantsSize moved to a buffer (ggml's multi_add: 212 bytes on
 * lavapipe's 128), run directly and from a graph. Real kernels, outputs checked against the
 * CPU. */
#include "launch_util.h"
#include "test_util.h"

/* libspirv.h defines (not declares) a const kDefaultMaxIdBound at file scope; a per-file name
 * keeps it from clashing with the library's at link time. */
#define kDefaultMaxIdBound test_push_spirv_tools_max_id_bound_
#include <spirv-tools/libspirv.h>
#undef kDefaultMaxIdBound

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 256u

/* The N words of `b` against want (launch_util's comparison). */
static void expect_words(cubec_device *d, cubec_buffer b, const uint32_t *want, const char *what)
{
    expect_range_in(d, 0, b, N, 0, N, want, what);
}

static cubec_launch_desc launch_of(cubec_kernel k, const cubec_buffer *bufs, const void *info,
                                   uint32_t info_size)
{
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.buffers = bufs;
    ld.buffer_count = 2;
    ld.info = info;
    ld.info_size = info_size;
    ld.groups[0] = N / 64;
    ld.groups[1] = ld.groups[2] = 1;
    return ld;
}

static const char small_push_src[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) readonly buffer A { uint a[]; };\n"
    "layout(std430, binding = 1) writeonly buffer O { uint o[]; };\n"
    "layout(push_constant) uniform P { uint mul; uint add; uint n; } pc;\n"
    "void main() {\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    o[i] = i < pc.n ? a[i] * pc.mul + pc.add : 0u;\n"
    "}\n";

/* A 12-byte block passed as 16 bytes (a C struct with a trailing 64-bit-aligned member padded, as
 * in the Khronos BDA sample), as 64 and as the whole push range: each runs; past the range it is
 * refused, naming the limit. */
static void test_info_size_beyond_block(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    cubec_kernel k = make_kernel(d, "small_push", small_push_src);
    uint32_t a[N], zero[N], want[N];
    uint32_t seed = 11;
    for (uint32_t i = 0; i < N; i++)
        a[i] = test_rand(&seed) % 1000u;
    memset(zero, 0, sizeof zero);
    cubec_buffer bufs[2];
    ASSERT_OK(cubec_buffer_from(d, 0, a, sizeof a, &bufs[0]));
    ASSERT_OK(cubec_buffer_from(d, 0, zero, sizeof zero, &bufs[1]));
    uint32_t *bytes = calloc(info.max_push_constants_size / 4 + 1, 4);
    assert_non_null(bytes);
    const uint32_t sizes[3] = {16, 64, info.max_push_constants_size};
    for (int s = 0; s < 3; s++) {
        bytes[0] = 3u + (uint32_t)s;
        bytes[1] = 7u;
        bytes[2] = N - 16u * (uint32_t)s;
        bytes[3] = 0xdeadbeefu; /* padding: never read */
        for (uint32_t i = 0; i < N; i++)
            want[i] = i < bytes[2] ? a[i] * bytes[0] + bytes[1] : 0u;
        cubec_launch_desc ld = launch_of(k, bufs, bytes, sizes[s]);
        ASSERT_OK(cubec_launch(d, 0, &ld));
        char what[48];
        snprintf(what, sizeof what, "o with info_size %u", sizes[s]);
        expect_words(d, bufs[1], want, what);
    }
    cubec_launch_desc ld = launch_of(k, bufs, bytes, info.max_push_constants_size + 4);
    char msg[160];
    snprintf(msg, sizeof msg, "declares 12 bytes of metadata (or up to maxPushConstantsSize %u)",
             info.max_push_constants_size);
    ASSERT_ERROR(cubec_launch(d, 0, &ld), CUBEC_INVALID_ARGUMENT, msg);
    ld.info_size = 8; /* smaller than the block: still refused */
    ASSERT_ERROR(cubec_launch(d, 0, &ld), CUBEC_INVALID_ARGUMENT, "desc->info_size is 8");
    free(bytes);
    for (int i = 0; i < 2; i++)
        ASSERT_OK(cubec_buffer_release(d, bufs[i]));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

/* o[i] = a[i] + 1: a kernel without push constants. */
static const char no_push_src[] = "#version 450\n"
                                  "layout(local_size_x = 64) in;\n"
                                  "layout(std430, binding = 0) readonly buffer A { uint a[]; };\n"
                                  "layout(std430, binding = 1) writeonly buffer O { uint o[]; };\n"
                                  "void main() {\n"
                                  "    uint i = gl_GlobalInvocationID.x;\n"
                                  "    o[i] = a[i] + 1u;\n"
                                  "}\n";

/* The same push constants for one kernel twice, with a kernel without any between, in one
 * command buffer: the server pushes them once (Vulkan keeps them across the pipeline binds), so
 * the backend must keep them too (the webgpu backend's immediates once forgot them at the next
 * pipeline: the third launch ran with zeros). */
static void test_push_kept_across_a_launch_without_push(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_kernel k = make_kernel(d, "small_push", small_push_src);
    cubec_kernel plain = make_kernel(d, "no_push", no_push_src);
    uint32_t a[N], zero[N], want[N], plus_one[N];
    uint32_t seed = 29;
    for (uint32_t i = 0; i < N; i++) {
        a[i] = test_rand(&seed) % 1000u;
        plus_one[i] = a[i] + 1u;
    }
    memset(zero, 0, sizeof zero);
    cubec_buffer in, out[3];
    ASSERT_OK(cubec_buffer_from(d, 0, a, sizeof a, &in));
    for (int i = 0; i < 3; i++)
        ASSERT_OK(cubec_buffer_from(d, 0, zero, sizeof zero, &out[i]));
    const uint32_t push[3] = {5u, 9u, N - 32u};
    for (uint32_t i = 0; i < N; i++)
        want[i] = i < push[2] ? a[i] * push[0] + push[1] : 0u;
    for (int i = 0; i < 3; i++) {
        cubec_buffer bufs[2] = {in, out[i]};
        cubec_launch_desc ld = launch_of(i == 1 ? plain : k, bufs, push, sizeof push);
        if (i == 1) {
            ld.info = NULL;
            ld.info_size = 0;
        }
        ASSERT_OK(cubec_launch(d, 0, &ld));
    }
    expect_words(d, out[0], want, "o of the first launch");
    expect_words(d, out[1], plus_one, "o of the launch without push constants");
    expect_words(d, out[2], want, "o of the second launch with the same push constants");
    ASSERT_OK(cubec_buffer_release(d, in));
    for (int i = 0; i < 3; i++)
        ASSERT_OK(cubec_buffer_release(d, out[i]));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    ASSERT_OK(cubec_kernel_destroy(d, plain));
    test_device_close(d);
}

/* A push block of 4 + 4 x K bytes, K chosen so that it exceeds the device's range by 20 words:
 * 212 bytes on lavapipe's 128, ggml multi_add's size. */
static const char big_push_src[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) readonly buffer A { uint a[]; };\n"
    "layout(std430, binding = 1) writeonly buffer O { uint o[]; };\n"
    "layout(push_constant) uniform P { uint n; uint k[K]; } pc;\n"
    "void main() {\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    o[i] = i < pc.n ? a[i] * pc.k[i % K] + pc.k[K - 1u - i % K] : 7u;\n"
    "}\n";

static void cpu_big(const uint32_t *a, const uint32_t *block, uint32_t k, uint32_t *o)
{
    for (uint32_t i = 0; i < N; i++)
        o[i] = i < block[0] ? a[i] * block[1 + i % k] + block[1 + (k - 1u - i % k)] : 7u;
}

static cubec_kernel big_push_kernel(cubec_device *d, uint32_t *out_k)
{
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    uint32_t k = info.max_push_constants_size / 4 + 20;
    char value[16];
    snprintf(value, sizeof value, "%u", k);
    cubec_define def = {"K", value};
    *out_k = k;
    cubec_kernel kern = make_kernel_defined(d, "big_push", big_push_src, &def, 1);
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, kern, &ki));
    assert_int_equal(ki.info_size, 4 + 4 * k);
    assert_true(ki.info_size > info.max_push_constants_size);
    return kern;
}

static void test_push_block_over_the_limit(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    uint32_t k = 0;
    cubec_kernel kern = big_push_kernel(d, &k);
    uint32_t a[N], zero[N], want[N];
    uint32_t seed = 12;
    for (uint32_t i = 0; i < N; i++)
        a[i] = test_rand(&seed) % 1000u;
    memset(zero, 0, sizeof zero);
    cubec_buffer bufs[2];
    ASSERT_OK(cubec_buffer_from(d, 0, a, sizeof a, &bufs[0]));
    ASSERT_OK(cubec_buffer_from(d, 0, zero, sizeof zero, &bufs[1]));
    uint32_t *block = calloc(1 + k, 4);
    assert_non_null(block);
    for (uint32_t round = 0; round < 3; round++) {
        block[0] = N - 30u * round;
        for (uint32_t j = 0; j < k; j++)
            block[1 + j] = j * 3u + round;
        cpu_big(a, block, k, want);
        cubec_launch_desc ld = launch_of(kern, bufs, block, 4 + 4 * k);
        ASSERT_OK(cubec_launch(d, 0, &ld));
        expect_words(d, bufs[1], want, "o of the moved push block");
    }
    free(block);
    for (int i = 0; i < 2; i++)
        ASSERT_OK(cubec_buffer_release(d, bufs[i]));
    ASSERT_OK(cubec_kernel_destroy(d, kern));
    test_device_close(d);
}

/* The moved block from a graph: each replay reads the bytes captured with it. */
static void test_moved_push_block_in_a_graph(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_stream s = new_stream(d);
    uint32_t k = 0;
    cubec_kernel kern = big_push_kernel(d, &k);
    uint32_t a[N], zero[N], want[N];
    uint32_t seed = 13;
    for (uint32_t i = 0; i < N; i++)
        a[i] = test_rand(&seed) % 1000u;
    memset(zero, 0, sizeof zero);
    cubec_buffer bufs[2];
    ASSERT_OK(cubec_buffer_from(d, s, a, sizeof a, &bufs[0]));
    ASSERT_OK(cubec_buffer_from(d, s, zero, sizeof zero, &bufs[1]));
    uint32_t *block = calloc(1 + k, 4);
    assert_non_null(block);
    block[0] = N - 5u;
    for (uint32_t j = 0; j < k; j++)
        block[1 + j] = j + 100u;
    cpu_big(a, block, k, want);
    cubec_launch_desc ld = launch_of(kern, bufs, block, 4 + 4 * k);
    ASSERT_OK(cubec_sync(d, 0));
    ASSERT_OK(cubec_graph_prepare(d, s));
    ASSERT_OK(cubec_launch(d, s, &ld));
    ASSERT_OK(cubec_graph_begin(d, s));
    ASSERT_OK(cubec_launch(d, s, &ld));
    cubec_graph g = {0};
    ASSERT_OK(cubec_graph_end(d, s, &g));
    /* The host's copy changes after capture: the graph keeps what it captured. */
    memset(block, 0, (1 + k) * 4u);
    for (int r = 0; r < 2; r++) {
        ASSERT_OK(cubec_write(d, s, bufs[1], 0, zero, sizeof zero));
        ASSERT_OK(cubec_graph_replay(d, s, g));
        ASSERT_OK(cubec_sync(d, s));
        expect_words(d, bufs[1], want, "o after a replay");
    }
    ASSERT_OK(cubec_graph_destroy(d, s, g));
    free(block);
    for (int i = 0; i < 2; i++)
        ASSERT_OK(cubec_buffer_release(d, bufs[i]));
    ASSERT_OK(cubec_kernel_destroy(d, kern));
    test_device_close(d);
}

/* The same kernel with K = 52 (212 bytes) as SPIR-V 1.0, the version glslc gives for Vulkan 1.0
 * (Kompute's and the Vulkan samples' shaders): StorageBuffer needs an extension there, which the
 * move adds. `glslc --target-env=vulkan1.0 -O` of big_push_src, without its debug names. */
static const char big_push_spirv_1_0[] =
    "OpCapability Shader\n"
    "%1 = OpExtInstImport \"GLSL.std.450\"\n"
    "OpMemoryModel Logical GLSL450\n"
    "OpEntryPoint GLCompute %4 \"main\" %gl_GlobalInvocationID\n"
    "OpExecutionMode %4 LocalSize 64 1 1\n"
    "OpDecorate %gl_GlobalInvocationID BuiltIn GlobalInvocationId\n"
    "OpDecorate %_runtimearr_uint ArrayStride 4\n"
    "OpMemberDecorate %_struct_17 0 NonReadable\n"
    "OpMemberDecorate %_struct_17 0 Offset 0\n"
    "OpDecorate %_struct_17 BufferBlock\n"
    "OpDecorate %19 DescriptorSet 0\n"
    "OpDecorate %19 Binding 1\n"
    "OpDecorate %_arr_uint_uint_52 ArrayStride 4\n"
    "OpMemberDecorate %_struct_26 0 Offset 0\n"
    "OpMemberDecorate %_struct_26 1 Offset 4\n"
    "OpDecorate %_struct_26 Block\n"
    "OpDecorate %_runtimearr_uint_0 ArrayStride 4\n"
    "OpMemberDecorate %_struct_38 0 NonWritable\n"
    "OpMemberDecorate %_struct_38 0 Offset 0\n"
    "OpDecorate %_struct_38 BufferBlock\n"
    "OpDecorate %40 DescriptorSet 0\n"
    "OpDecorate %40 Binding 0\n"
    "OpDecorate %gl_WorkGroupSize BuiltIn WorkgroupSize\n"
    "%void = OpTypeVoid\n"
    "%3 = OpTypeFunction %void\n"
    "%uint = OpTypeInt 32 0\n"
    "%v3uint = OpTypeVector %uint 3\n"
    "%_ptr_Input_v3uint = OpTypePointer Input %v3uint\n"
    "%gl_GlobalInvocationID = OpVariable %_ptr_Input_v3uint Input\n"
    "%uint_0 = OpConstant %uint 0\n"
    "%_ptr_Input_uint = OpTypePointer Input %uint\n"
    "%_runtimearr_uint = OpTypeRuntimeArray %uint\n"
    "%_struct_17 = OpTypeStruct %_runtimearr_uint\n"
    "%_ptr_Uniform__struct_17 = OpTypePointer Uniform %_struct_17\n"
    "%19 = OpVariable %_ptr_Uniform__struct_17 Uniform\n"
    "%int = OpTypeInt 32 1\n"
    "%int_0 = OpConstant %int 0\n"
    "%uint_52 = OpConstant %uint 52\n"
    "%_arr_uint_uint_52 = OpTypeArray %uint %uint_52\n"
    "%_struct_26 = OpTypeStruct %uint %_arr_uint_uint_52\n"
    "%_ptr_PushConstant__struct_26 = OpTypePointer PushConstant %_struct_26\n"
    "%28 = OpVariable %_ptr_PushConstant__struct_26 PushConstant\n"
    "%_ptr_PushConstant_uint = OpTypePointer PushConstant %uint\n"
    "%bool = OpTypeBool\n"
    "%_runtimearr_uint_0 = OpTypeRuntimeArray %uint\n"
    "%_struct_38 = OpTypeStruct %_runtimearr_uint_0\n"
    "%_ptr_Uniform__struct_38 = OpTypePointer Uniform %_struct_38\n"
    "%40 = OpVariable %_ptr_Uniform__struct_38 Uniform\n"
    "%_ptr_Uniform_uint = OpTypePointer Uniform %uint\n"
    "%int_1 = OpConstant %int 1\n"
    "%uint_51 = OpConstant %uint 51\n"
    "%uint_7 = OpConstant %uint 7\n"
    "%uint_64 = OpConstant %uint 64\n"
    "%uint_1 = OpConstant %uint 1\n"
    "%gl_WorkGroupSize = OpConstantComposite %v3uint %uint_64 %uint_1 %uint_1\n"
    "%4 = OpFunction %void None %3\n"
    "%5 = OpLabel\n"
    "%14 = OpAccessChain %_ptr_Input_uint %gl_GlobalInvocationID %uint_0\n"
    "%15 = OpLoad %uint %14\n"
    "%30 = OpAccessChain %_ptr_PushConstant_uint %28 %int_0\n"
    "%31 = OpLoad %uint %30\n"
    "%33 = OpULessThan %bool %15 %31\n"
    "OpSelectionMerge %36 None\n"
    "OpBranchConditional %33 %35 %58\n"
    "%35 = OpLabel\n"
    "%43 = OpAccessChain %_ptr_Uniform_uint %40 %int_0 %15\n"
    "%44 = OpLoad %uint %43\n"
    "%47 = OpUMod %uint %15 %uint_52\n"
    "%48 = OpAccessChain %_ptr_PushConstant_uint %28 %int_1 %47\n"
    "%49 = OpLoad %uint %48\n"
    "%50 = OpIMul %uint %44 %49\n"
    "%54 = OpISub %uint %uint_51 %47\n"
    "%55 = OpAccessChain %_ptr_PushConstant_uint %28 %int_1 %54\n"
    "%56 = OpLoad %uint %55\n"
    "%57 = OpIAdd %uint %50 %56\n"
    "OpBranch %36\n"
    "%58 = OpLabel\n"
    "OpBranch %36\n"
    "%36 = OpLabel\n"
    "%65 = OpPhi %uint %57 %35 %uint_7 %58\n"
    "%61 = OpAccessChain %_ptr_Uniform_uint %19 %int_0 %15\n"
    "OpStore %61 %65\n"
    "OpReturn\n"
    "OpFunctionEnd\n";

static void test_moved_push_block_of_spirv_1_0(void **state)
{
    (void)state;
    spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_0);
    assert_non_null(ctx);
    spv_binary bin = NULL;
    spv_diagnostic diag = NULL;
    if (spvTextToBinary(ctx, big_push_spirv_1_0, strlen(big_push_spirv_1_0), &bin, &diag) !=
        SPV_SUCCESS)
        fail_msg("assembly failed: %s", diag && diag->error ? diag->error : "?");
    assert_int_equal(bin->code[1], 0x00010000u);
    cubec_device *d = test_device_open();
    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    kd.name = "big_push_spv";
    kd.spirv = bin->code;
    kd.spirv_words = bin->wordCount;
    cubec_kernel kern = {0};
    ASSERT_OK(cubec_kernel_create(d, &kd, &kern));
    spvBinaryDestroy(bin);
    spvDiagnosticDestroy(diag);
    spvContextDestroy(ctx);
    const uint32_t k = 52;
    uint32_t a[N], zero[N], want[N], block[53];
    uint32_t seed = 14;
    for (uint32_t i = 0; i < N; i++)
        a[i] = test_rand(&seed) % 1000u;
    memset(zero, 0, sizeof zero);
    block[0] = N - 9u;
    for (uint32_t j = 0; j < k; j++)
        block[1 + j] = 5u * j + 2u;
    cpu_big(a, block, k, want);
    cubec_buffer bufs[2];
    ASSERT_OK(cubec_buffer_from(d, 0, a, sizeof a, &bufs[0]));
    ASSERT_OK(cubec_buffer_from(d, 0, zero, sizeof zero, &bufs[1]));
    cubec_launch_desc ld = launch_of(kern, bufs, block, sizeof block);
    ASSERT_OK(cubec_launch(d, 0, &ld));
    expect_words(d, bufs[1], want, "o of the SPIR-V 1.0 kernel");
    for (int i = 0; i < 2; i++)
        ASSERT_OK(cubec_buffer_release(d, bufs[i]));
    ASSERT_OK(cubec_kernel_destroy(d, kern));
    test_device_close(d);
}

/* A push block with 16-bit and 8-bit members over the limit: 4 + 2 x 64 + 64 = 196 bytes, more
 * than lavapipe's 128. Its members are read from the moved buffer, which needs the storage-buffer
 * forms of the 16- and 8-bit capabilities (the push-constant ones no longer apply). AT, the type
 * of `a`, is uint or uint16_t: with uint16_t the module declares StorageBuffer16BitAccess for `a`
 * already, and the move drops StoragePushConstant16 instead of replacing it. */
static const char small_types_push_src[] =
    "#version 450\n"
    "#extension GL_EXT_shader_16bit_storage : require\n"
    "#extension GL_EXT_shader_8bit_storage : require\n"
    "layout(local_size_x = 64) in;\n"
    "layout(std430, binding = 0) readonly buffer A { AT a[]; };\n"
    "layout(std430, binding = 1) writeonly buffer O { uint o[]; };\n"
    "layout(push_constant) uniform P { uint n; float16_t h[64]; uint8_t b[64]; } pc;\n"
    "void main() {\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    o[i] = i < pc.n ? uint(a[i]) * uint(pc.b[i % 64u]) + uint(float(pc.h[63u - i % 64u]))"
    " : 7u;\n"
    "}\n";

/* The C mirror of the block: std430 places h at 4 and b at 132. */
typedef struct small_types_block {
    uint32_t n;
    uint16_t h[64]; /* float16 bits */
    uint8_t b[64];
} small_types_block;

/* The float16 bits of a whole number in 0..2048, which float16 holds exactly. */
static uint16_t half_of(uint32_t v)
{
    if (v == 0) return 0;
    uint32_t e = 0;
    while ((v >> (e + 1)) != 0)
        e++;
    return (uint16_t)(((e + 15u) << 10) | ((v << (10u - e)) & 0x3ffu));
}

static int device_has(cubec_device *d, uint32_t features)
{
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    return (info.features & features) == features;
}

static cubec_status small_types_kernel(cubec_device *d, int a16, cubec_kernel *out)
{
    cubec_define def = {"AT", a16 ? "uint16_t" : "uint"};
    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    kd.name = "small_types_push";
    kd.glsl = small_types_push_src;
    kd.defines = &def;
    kd.define_count = 1;
    return cubec_kernel_create(d, &kd, out);
}

/* The block runs from the buffer, each member read where the C struct put it, with `a` of 32 and
 * of 16 bits; with the device's 16-bit (or 8-bit) storage-buffer access turned off, the kernel is
 * refused naming the capability the move needs and the feature. */
static void test_moved_push_block_with_16_and_8_bit_members(void **state)
{
    (void)state;
    assert_int_equal(sizeof(small_types_block), 196);
    cubec_device *d = test_device_open();
    if (!device_has(d, CUBEC_FEATURE_STORAGE_BUFFER_16BIT | CUBEC_FEATURE_STORAGE_BUFFER_8BIT |
                           CUBEC_FEATURE_PUSH_CONSTANT_16BIT | CUBEC_FEATURE_PUSH_CONSTANT_8BIT)) {
        test_device_close(d);
        skip(); /* lavapipe has all four; a device without them cannot compile the source */
    }
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    assert_true(sizeof(small_types_block) > info.max_push_constants_size);
    for (int a16 = 0; a16 < 2; a16++) {
        cubec_kernel kern = {0};
        ASSERT_OK(small_types_kernel(d, a16, &kern));
        cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
        ASSERT_OK(cubec_kernel_get_info(d, kern, &ki));
        assert_int_equal(ki.info_size, sizeof(small_types_block));
        assert_int_equal(ki.info_in_push_constants, 0);
        uint32_t a[N], zero[N], want[N];
        uint16_t a_16[N];
        uint32_t seed = 15u + (uint32_t)a16;
        for (uint32_t i = 0; i < N; i++) {
            a[i] = test_rand(&seed) % 1000u;
            a_16[i] = (uint16_t)a[i];
        }
        memset(zero, 0, sizeof zero);
        small_types_block block;
        block.n = N - 11u - (uint32_t)a16;
        for (uint32_t j = 0; j < 64; j++) {
            block.h[j] = half_of(j * 31u + 1u + (uint32_t)a16);
            block.b[j] = (uint8_t)(200u - 3u * j);
        }
        for (uint32_t i = 0; i < N; i++)
            want[i] = i < block.n
                          ? a[i] * block.b[i % 64u] + ((63u - i % 64u) * 31u + 1u + (uint32_t)a16)
                          : 7u;
        cubec_buffer bufs[2];
        if (a16)
            ASSERT_OK(cubec_buffer_from(d, 0, a_16, sizeof a_16, &bufs[0]));
        else
            ASSERT_OK(cubec_buffer_from(d, 0, a, sizeof a, &bufs[0]));
        ASSERT_OK(cubec_buffer_from(d, 0, zero, sizeof zero, &bufs[1]));
        cubec_launch_desc ld = launch_of(kern, bufs, &block, sizeof block);
        ASSERT_OK(cubec_launch(d, 0, &ld));
        expect_words(d, bufs[1], want,
                     a16 ? "o of the moved 16/8-bit push block, a of 16 bits"
                         : "o of the moved 16/8-bit push block");
        for (int i = 0; i < 2; i++)
            ASSERT_OK(cubec_buffer_release(d, bufs[i]));
        ASSERT_OK(cubec_kernel_destroy(d, kern));
    }
    test_device_close(d);

    /* The moved block needs storage-buffer access of its member types, which a device may lack
     * while it has the push-constant form: the refusal names the capability and the feature. */
    static const char *const off[2] = {"storage_buffer_16bit", "storage_buffer_8bit"};
    static const char *const why[2] = {
        "needs SPIR-V capability StorageBuffer16BitAccess, which needs the device feature "
        "storage_buffer_16bit",
        "needs SPIR-V capability StorageBuffer8BitAccess, which needs the device feature "
        "storage_buffer_8bit"};
    for (int f = 0; f < 2; f++) {
        setenv("CUBEC_DISABLE_FEATURES", off[f], 1);
        d = test_device_open();
        unsetenv("CUBEC_DISABLE_FEATURES");
        cubec_kernel kern = {0};
        /* `a` of 32 bits: 16-bit storage-buffer access is the moved block's need alone. */
        ASSERT_ERROR(small_types_kernel(d, 0, &kern), CUBEC_UNSUPPORTED, why[f]);
        assert_int_equal(kern.id, 0);
        test_device_close(d);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_info_size_beyond_block),
        cmocka_unit_test(test_push_block_over_the_limit),
        cmocka_unit_test(test_push_kept_across_a_launch_without_push),
        cmocka_unit_test(test_moved_push_block_in_a_graph),
        cmocka_unit_test(test_moved_push_block_of_spirv_1_0),
        cmocka_unit_test(test_moved_push_block_with_16_and_8_bit_members),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
