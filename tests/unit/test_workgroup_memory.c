/* kernel/workgroup_memory (the shared memory a SPIR-V module declares, and 64-bit atomics on it)
 * and kernel/limits (a reflected kernel against device limits), without a device. Modules are
 * SPIR-V assembly assembled by SPIRV-Tools in the test; each expected size is worked out by hand
 * in the comment above it, as the Khronos validation layer counts (no padding, bool 4 bytes). */
#include "test_util.h"

#include "kernel/limits.h"
#include "kernel/workgroup_memory.h"

/* libspirv.h defines (not declares) a const kDefaultMaxIdBound at file scope; a per-file name
 * keeps two C files that include it from clashing at link time. */
#define kDefaultMaxIdBound test_workgroup_spirv_tools_max_id_bound_
#include <spirv-tools/libspirv.h>
#undef kDefaultMaxIdBound

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct module {
    uint32_t *words;
    size_t count;
} module;

static module assemble(const char *text)
{
    spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_2);
    assert_non_null(ctx);
    spv_binary binary = NULL;
    spv_diagnostic diag = NULL;
    if (spvTextToBinary(ctx, text, strlen(text), &binary, &diag) != SPV_SUCCESS)
        fail_msg("assembly failed: %s", diag && diag->error ? diag->error : "?");
    module m = {malloc(binary->wordCount * sizeof(uint32_t)), binary->wordCount};
    assert_non_null(m.words);
    memcpy(m.words, binary->code, m.count * sizeof(uint32_t));
    spvBinaryDestroy(binary);
    spvDiagnosticDestroy(diag);
    spvContextDestroy(ctx);
    return m;
}

/* A compute module: the header below, then `types` (types, constants and global variables),
 * then a main whose body is `body`. */
static module compute_module(const char *types, const char *body)
{
    static const char head[] = "OpCapability Shader\n"
                               "OpCapability Int64\n"
                               "OpCapability Int64Atomics\n"
                               "OpMemoryModel Logical GLSL450\n"
                               "OpEntryPoint GLCompute %main \"main\"\n"
                               "OpExecutionMode %main LocalSize 1 1 1\n"
                               "OpName %tile \"tile\"\n"
                               "%void = OpTypeVoid\n"
                               "%fn = OpTypeFunction %void\n"
                               "%bool = OpTypeBool\n"
                               "%uint = OpTypeInt 32 0\n"
                               "%ulong = OpTypeInt 64 0\n"
                               "%float = OpTypeFloat 32\n"
                               "%double = OpTypeFloat 64\n"
                               "%v3 = OpTypeVector %float 3\n"
                               "%c0 = OpConstant %uint 0\n"
                               "%c1 = OpConstant %uint 1\n"
                               "%c2 = OpConstant %uint 2\n"
                               "%c10 = OpConstant %uint 10\n"
                               "%scope = OpConstant %uint 2\n"
                               "%sem = OpConstant %uint 0\n"
                               "%one64 = OpConstant %ulong 1\n";
    char text[4096];
    snprintf(text, sizeof text,
             "%s%s%%main = OpFunction %%void None %%fn\n%%entry = OpLabel\n%sOpReturn\n"
             "OpFunctionEnd\n",
             head, types, body);
    return assemble(text);
}

static workgroup_memory scan_ok(const char *types, const char *body)
{
    module m = compute_module(types, body);
    workgroup_memory wm;
    memset(&wm, 0xa5, sizeof wm);
    ASSERT_OK(workgroup_memory_scan(m.words, m.count, &wm));
    free(m.words);
    return wm;
}

/* Every kind of type a Workgroup variable can have, summed without padding. */
static void test_sizes(void **state)
{
    (void)state;
    /* No Workgroup variable: nothing, and a private variable does not count. */
    workgroup_memory wm = scan_ok("%pf = OpTypePointer Private %float\n"
                                  "%tile = OpVariable %pf Private\n",
                                  "");
    assert_int_equal(wm.bytes, 0);
    assert_int_equal(wm.variables, 0);
    assert_int_equal(wm.int64_atomics, 0);
    /* struct { bool; vec3; vec3[10]; } = 4 + 12 + 120 = 136, and a double = 8: 144. */
    wm = scan_ok("%arr = OpTypeArray %v3 %c10\n"
                 "%S = OpTypeStruct %bool %v3 %arr\n"
                 "%pS = OpTypePointer Workgroup %S\n"
                 "%pd = OpTypePointer Workgroup %double\n"
                 "%tile = OpVariable %pS Workgroup\n"
                 "%d = OpVariable %pd Workgroup\n",
                 "");
    assert_int_equal(wm.bytes, 144);
    assert_int_equal(wm.variables, 2);
    /* mat2x3 (2 columns of vec3) [10][2] = 24 * 20 = 480; a 64-bit length constant works too. */
    wm = scan_ok("%m = OpTypeMatrix %v3 2\n"
                 "%c10l = OpConstant %ulong 10\n"
                 "%a1 = OpTypeArray %m %c10l\n"
                 "%a2 = OpTypeArray %a1 %c2\n"
                 "%pa = OpTypePointer Workgroup %a2\n"
                 "%tile = OpVariable %pa Workgroup\n",
                 "");
    assert_int_equal(wm.bytes, 480);
    /* A specialization constant's default gives the length: uint[300] = 1200. */
    wm = scan_ok("%n = OpSpecConstant %uint 300\n"
                 "%a = OpTypeArray %uint %n\n"
                 "%pa = OpTypePointer Workgroup %a\n"
                 "%tile = OpVariable %pa Workgroup\n",
                 "");
    assert_int_equal(wm.bytes, 1200);
}

/* With the pipeline's values (by SpecId) a specialization constant's length is the value given;
 * one not given keeps its default, and a value for an id the module lacks changes nothing. */
static void test_specialized_sizes(void **state)
{
    (void)state;
    module m = compute_module("OpDecorate %n SpecId 7\n"
                              "OpDecorate %k SpecId 8\n"
                              "%n = OpSpecConstant %uint 300\n"
                              "%k = OpSpecConstant %uint 5\n"
                              "%a = OpTypeArray %uint %n\n"
                              "%b = OpTypeArray %float %k\n"
                              "%pa = OpTypePointer Workgroup %a\n"
                              "%pb = OpTypePointer Workgroup %b\n"
                              "%tile = OpVariable %pa Workgroup\n"
                              "%t2 = OpVariable %pb Workgroup\n",
                              "");
    workgroup_memory wm;
    /* Defaults: uint[300] + float[5] = 1200 + 20. */
    ASSERT_OK(workgroup_memory_scan(m.words, m.count, &wm));
    assert_int_equal(wm.bytes, 1220);
    /* SpecId 7 = 16: uint[16] + float[5] = 64 + 20. */
    const cubec_spec_constant given[] = {{.id = 99, .value = 1000}, {.id = 7, .value = 16}};
    ASSERT_OK(workgroup_memory_scan_specialized(m.words, m.count, given, 2, &wm));
    assert_int_equal(wm.bytes, 84);
    /* Both given, the second past any limit: 4 * 100000 + 4 * 3. */
    const cubec_spec_constant both[] = {{.id = 8, .value = 3}, {.id = 7, .value = 100000}};
    ASSERT_OK(workgroup_memory_scan_specialized(m.words, m.count, both, 2, &wm));
    assert_int_equal(wm.bytes, 400012);
    ASSERT_ERROR(workgroup_memory_scan_specialized(m.words, m.count, NULL, 1, &wm),
                 CUBEC_INVALID_ARGUMENT, "spec is NULL with spec_count 1");
    free(m.words);
}

/* Sizes that overflow 64 bits saturate instead of wrapping to something small. */
static void test_overflow_saturates(void **state)
{
    (void)state;
    workgroup_memory wm = scan_ok("%big = OpConstant %uint 4294967295\n"
                                  "%a1 = OpTypeArray %double %big\n"
                                  "%a2 = OpTypeArray %a1 %big\n"
                                  "%a3 = OpTypeArray %a2 %big\n"
                                  "%pa = OpTypePointer Workgroup %a3\n"
                                  "%tile = OpVariable %pa Workgroup\n"
                                  "%tile2 = OpVariable %pa Workgroup\n",
                                  "");
    assert_true(wm.bytes == UINT64_MAX);
    assert_int_equal(wm.variables, 2);
}

/* A length given by an OpSpecConstantOp expression is evaluated with the values the pipeline
 * gets (ggml's `shared float tmp[BLOCK_SIZE * 2]`): uint[16 * 2] = 128 bytes by default,
 * uint[100 * 2] = 800 with SpecId 0 = 100. */
static void test_spec_constant_expression(void **state)
{
    (void)state;
    module m = compute_module("OpDecorate %n SpecId 0\n"
                              "%n = OpSpecConstant %uint 16\n"
                              "%n2 = OpSpecConstantOp %uint IMul %n %c2\n"
                              "%a = OpTypeArray %uint %n2\n"
                              "%pa = OpTypePointer Workgroup %a\n"
                              "%tile = OpVariable %pa Workgroup\n",
                              "");
    workgroup_memory wm;
    ASSERT_OK(workgroup_memory_scan(m.words, m.count, &wm));
    assert_int_equal(wm.bytes, 4 * 16 * 2);
    const cubec_spec_constant given[] = {{.id = 0, .value = 100}};
    ASSERT_OK(workgroup_memory_scan_specialized(m.words, m.count, given, 1, &wm));
    assert_int_equal(wm.bytes, 4 * 100 * 2);
    free(m.words);
}

/* Each OpSpecConstantOp opcode the evaluator knows, on a = 13 (SpecId 0), b = 4 (SpecId 1) and
 * sa = -13 (signed, SpecId 2), as the length of a uint array: the expected length is computed
 * here in C. Bool results choose between two lengths through Select. Then the same with
 * a = 100, b = 7, sa = -9 given as specialization values. */
static void test_spec_op_evaluation(void **state)
{
    (void)state;
    static const struct {
        const char *expr;
        int op; /* which formula below */
    } cases[] = {
        {"%len = OpSpecConstantOp %uint IAdd %a %b\n", 0},
        {"%len = OpSpecConstantOp %uint ISub %a %b\n", 1},
        {"%len = OpSpecConstantOp %uint IMul %a %b\n", 2},
        {"%len = OpSpecConstantOp %uint UDiv %a %b\n", 3},
        {"%len = OpSpecConstantOp %uint UMod %a %b\n", 4},
        {"%q = OpSpecConstantOp %int SDiv %sa %bi\n%len = OpSpecConstantOp %uint SNegate %q\n", 5},
        {"%q = OpSpecConstantOp %int SRem %sa %bi\n%len = OpSpecConstantOp %uint ISub %c10 %q\n",
         6},
        {"%q = OpSpecConstantOp %int SMod %sa %bi\n%len = OpSpecConstantOp %uint IAdd %q %c10\n",
         7},
        {"%len = OpSpecConstantOp %uint ShiftLeftLogical %a %b\n", 8},
        {"%len = OpSpecConstantOp %uint ShiftRightLogical %a %c1\n", 9},
        {"%q = OpSpecConstantOp %int ShiftRightArithmetic %sa %c1\n"
         "%len = OpSpecConstantOp %uint SNegate %q\n",
         10},
        {"%len = OpSpecConstantOp %uint BitwiseOr %a %b\n", 11},
        {"%len = OpSpecConstantOp %uint BitwiseXor %a %b\n", 12},
        {"%len = OpSpecConstantOp %uint BitwiseAnd %a %c10\n", 13},
        {"%q = OpSpecConstantOp %uint Not %a\n%len = OpSpecConstantOp %uint BitwiseAnd %q %c10\n",
         14},
        {"%p = OpSpecConstantOp %bool UGreaterThan %a %b\n"
         "%len = OpSpecConstantOp %uint Select %p %a %b\n",
         15},
        {"%p = OpSpecConstantOp %bool ULessThan %a %b\n"
         "%len = OpSpecConstantOp %uint Select %p %a %b\n",
         16},
        {"%p = OpSpecConstantOp %bool SLessThan %sa %bi\n"
         "%len = OpSpecConstantOp %uint Select %p %a %b\n",
         17},
        {"%p = OpSpecConstantOp %bool IEqual %a %b\n"
         "%len = OpSpecConstantOp %uint Select %p %a %c10\n",
         18},
        {"%p = OpSpecConstantOp %bool UGreaterThanEqual %a %c10\n"
         "%p2 = OpSpecConstantOp %bool LogicalNot %p\n"
         "%len = OpSpecConstantOp %uint Select %p2 %a %b\n",
         19},
        {"%len = OpSpecConstantOp %uint CompositeExtract %vec 1\n", 20},
    };
    static const char decls[] = "OpDecorate %a SpecId 0\n"
                                "OpDecorate %b SpecId 1\n"
                                "OpDecorate %sa SpecId 2\n"
                                "%int = OpTypeInt 32 1\n"
                                "%uv3 = OpTypeVector %uint 3\n"
                                "%a = OpSpecConstant %uint 13\n"
                                "%b = OpSpecConstant %uint 4\n"
                                "%sa = OpSpecConstant %int -13\n"
                                "%bi = OpSpecConstantOp %int IAdd %b %c0\n"
                                "%vec = OpSpecConstantComposite %uv3 %a %b %c1\n";
    const cubec_spec_constant given[] = {{0, 100}, {1, 7}, {2, (uint32_t)-9}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char types[2048];
        snprintf(types, sizeof types,
                 "%s%s%%arr = OpTypeArray %%uint %%len\n%%pa = OpTypePointer Workgroup %%arr\n"
                 "%%tile = OpVariable %%pa Workgroup\n",
                 decls, cases[i].expr);
        module m = compute_module(types, "");
        for (int with_spec = 0; with_spec < 2; with_spec++) {
            uint32_t a = with_spec ? 100 : 13, b = with_spec ? 7 : 4;
            int32_t sa = with_spec ? -9 : -13;
            int64_t want = 0;
            switch (cases[i].op) {
            case 0: want = a + b; break;
            case 1: want = a - b; break;
            case 2: want = a * b; break;
            case 3: want = a / b; break;
            case 4: want = a % b; break;
            case 5: want = -(sa / (int32_t)b); break;   /* C and SPIR-V both round to zero */
            case 6: want = 10 - sa % (int32_t)b; break; /* the sign of the dividend */
            case 7:
                want = ((sa % (int32_t)b) + (int32_t)b) % (int32_t)b + 10;
                break; /* divisor's */
            case 8: want = a << b; break;
            case 9: want = a >> 1; break;
            case 10: want = -(sa < 0 ? -((-sa + 1) / 2) : sa / 2); break; /* floor(sa / 2) */
            case 11: want = a | b; break;
            case 12: want = a ^ b; break;
            case 13: want = a & 10u; break;
            case 14: want = ~a & 10u; break;
            case 15: want = a > b ? a : b; break;
            case 16: want = a < b ? a : b; break;
            case 17: want = sa < (int32_t)b ? a : b; break;
            case 18: want = a == b ? a : 10; break;
            case 19: want = !(a >= 10) ? a : b; break;
            case 20: want = b; break;
            }
            workgroup_memory wm;
            print_message("case %zu (%s) with_spec %d: want length %lld\n", i, cases[i].expr,
                          with_spec, (long long)want);
            ASSERT_OK(
                workgroup_memory_scan_specialized(m.words, m.count, given, with_spec ? 3 : 0, &wm));
            assert_int_equal(wm.bytes, 4 * (uint64_t)want);
        }
        free(m.words);
    }
}

/* A length that cannot be evaluated is recorded as the module's problem under those values,
 * naming the variable, and refused by workgroup_memory_problem: a division by zero (SPIR-V leaves
 * it undefined) reached only through the specialization value. The defaults have no problem. */
static void test_spec_constant_expression_refused(void **state)
{
    (void)state;
    module m = compute_module("OpDecorate %d SpecId 3\n"
                              "%d = OpSpecConstant %uint 2\n"
                              "%n2 = OpSpecConstantOp %uint UDiv %c10 %d\n"
                              "%a = OpTypeArray %uint %n2\n"
                              "%pa = OpTypePointer Workgroup %a\n"
                              "%tile = OpVariable %pa Workgroup\n",
                              "");
    workgroup_memory wm;
    ASSERT_OK(workgroup_memory_scan(m.words, m.count, &wm));
    assert_int_equal(wm.bytes, 4 * 5);
    assert_int_equal(wm.problem, WORKGROUP_SHAPE_OK);
    assert_null(workgroup_memory_problem(&wm));
    const cubec_spec_constant zero[] = {{.id = 3, .value = 0}};
    ASSERT_OK(workgroup_memory_scan_specialized(m.words, m.count, zero, 1, &wm));
    assert_int_equal(wm.problem, WORKGROUP_LENGTH_UNKNOWN);
    assert_int_equal(wm.bytes, 0);
    ASSERT_ERROR(workgroup_memory_problem(&wm), CUBEC_UNSUPPORTED,
                 "Workgroup (shared) variable 'tile' has an array length given by a "
                 "specialization-constant expression that cubec cannot evaluate");
    free(m.words);
}

/* An array length below 1 once specialized (Vulkan forbids it, VUID-...-06719) is recorded with
 * the variable and the length: 0 from an unsigned expression (ggml's flash_attn with its
 * defaults), -2 from a signed one; the values that make it 1 or more clear it. */
static void test_length_below_one(void **state)
{
    (void)state;
    module m = compute_module("OpDecorate %b SpecId 0\n"
                              "OpDecorate %s SpecId 1\n"
                              "%int = OpTypeInt 32 1\n"
                              "%b = OpSpecConstant %uint 16\n"
                              "%s = OpSpecConstant %uint 32\n"
                              "%q = OpSpecConstantOp %uint UDiv %b %s\n"
                              "%a = OpTypeArray %float %q\n"
                              "%pa = OpTypePointer Workgroup %a\n"
                              "%tile = OpVariable %pa Workgroup\n",
                              "");
    workgroup_memory wm;
    ASSERT_OK(workgroup_memory_scan(m.words, m.count, &wm)); /* 16 / 32 = 0 */
    assert_int_equal(wm.problem, WORKGROUP_LENGTH_BELOW_ONE);
    assert_int_equal(wm.length, 0);
    ASSERT_ERROR(workgroup_memory_problem(&wm), CUBEC_INVALID_SPIRV,
                 "Workgroup (shared) variable 'tile' has an array length of 0 with these "
                 "specialization values");
    const cubec_spec_constant fix[] = {{0, 128}, {1, 32}};
    ASSERT_OK(workgroup_memory_scan_specialized(m.words, m.count, fix, 2, &wm));
    assert_int_equal(wm.problem, WORKGROUP_SHAPE_OK);
    assert_int_equal(wm.bytes, 4 * 4);
    free(m.words);

    /* A signed length of -2 in a Private array no variable of which is named: the type. */
    m = compute_module("OpDecorate %k SpecId 2\n"
                       "%int = OpTypeInt 32 1\n"
                       "%k = OpSpecConstant %int 3\n"
                       "%two = OpConstant %int 2\n"
                       "%len = OpSpecConstantOp %int ISub %k %two\n"
                       "%a = OpTypeArray %float %len\n"
                       "%pa = OpTypePointer Private %a\n"
                       "%priv = OpVariable %pa Private\n",
                       "");
    ASSERT_OK(workgroup_memory_scan(m.words, m.count, &wm));
    assert_int_equal(wm.problem, WORKGROUP_SHAPE_OK);
    const cubec_spec_constant neg[] = {{2, 0}};
    ASSERT_OK(workgroup_memory_scan_specialized(m.words, m.count, neg, 1, &wm));
    assert_int_equal(wm.problem, WORKGROUP_LENGTH_BELOW_ONE);
    assert_int_equal(wm.length, -2);
    assert_int_equal(wm.what_shared, 0);
    ASSERT_ERROR(workgroup_memory_problem(&wm), CUBEC_INVALID_SPIRV,
                 "has an array length of -2 with these specialization values");
    free(m.words);
}

/* 64-bit atomics are found on Workgroup memory only, through variables and access chains, for
 * read-modify-write atomics and stores alike. */
static void test_int64_atomics(void **state)
{
    (void)state;
    static const char types[] = "%pl = OpTypePointer Workgroup %ulong\n"
                                "%pu = OpTypePointer Workgroup %uint\n"
                                "%a = OpTypeArray %ulong %c10\n"
                                "%pa = OpTypePointer Workgroup %a\n"
                                "%rt = OpTypeRuntimeArray %ulong\n"
                                "%B = OpTypeStruct %rt\n"
                                "%pB = OpTypePointer StorageBuffer %B\n"
                                "%psl = OpTypePointer StorageBuffer %ulong\n"
                                "%tile = OpVariable %pl Workgroup\n"
                                "%small = OpVariable %pu Workgroup\n"
                                "%arr = OpVariable %pa Workgroup\n"
                                "%buf = OpVariable %pB StorageBuffer\n";
    workgroup_memory wm = scan_ok(types, "%r = OpAtomicIAdd %ulong %tile %scope %sem %one64\n");
    assert_int_equal(wm.int64_atomics, 1);
    assert_int_equal(wm.bytes, 8 + 4 + 80);
    wm = scan_ok(types, "%p = OpAccessChain %pl %arr %c1\n"
                        "%r = OpAtomicUMax %ulong %p %scope %sem %one64\n");
    assert_int_equal(wm.int64_atomics, 1);
    wm = scan_ok(types, "OpAtomicStore %tile %scope %sem %one64\n");
    assert_int_equal(wm.int64_atomics, 1);
    /* 32-bit atomics on shared memory and 64-bit ones on a buffer need no shared int64 feature. */
    wm = scan_ok(types, "%r = OpAtomicIAdd %uint %small %scope %sem %c1\n"
                        "%p = OpAccessChain %psl %buf %c0 %c1\n"
                        "%r2 = OpAtomicIAdd %ulong %p %scope %sem %one64\n"
                        "%r3 = OpLoad %ulong %tile\n");
    assert_int_equal(wm.int64_atomics, 0);
}

static void test_malformed(void **state)
{
    (void)state;
    module m = compute_module("", "");
    workgroup_memory wm;
    ASSERT_ERROR(workgroup_memory_scan(NULL, 5, &wm), CUBEC_INVALID_ARGUMENT, "words");
    ASSERT_ERROR(workgroup_memory_scan(m.words, m.count, NULL), CUBEC_INVALID_ARGUMENT, "out");
    ASSERT_ERROR(workgroup_memory_scan(m.words, 3, &wm), CUBEC_INVALID_SPIRV, "header");
    /* An instruction that claims more words than the module has. */
    m.words[5] |= 0xffffu << 16;
    ASSERT_ERROR(workgroup_memory_scan(m.words, m.count, &wm), CUBEC_INVALID_SPIRV, "word 5");
    /* An id bound past the validator's. */
    m.words[3] = 0x7fffffffu;
    ASSERT_ERROR(workgroup_memory_scan(m.words, m.count, &wm), CUBEC_INVALID_SPIRV, "id bound");
    free(m.words);
}

static const kernel_limits lavapipe_like = {
    .max_workgroup_size = {1024, 512, 64},
    .max_workgroup_invocations = 1024,
    .max_shared_memory_size = 32768,
    .max_push_constants_size = 128,
    .max_info_size = CUBEC_KERNEL_MAX_INFO_BYTES,
};

static kernel_reflection at_every_limit(void)
{
    kernel_reflection r;
    memset(&r, 0, sizeof r);
    r.workgroup_size[0] = 16;
    r.workgroup_size[1] = 4;
    r.workgroup_size[2] = 16; /* 1024 invocations */
    r.shared_memory_size = 32768;
    r.push_constant_size = 128;
    return r;
}

/* Each limit: exactly at it passes, one past it is refused naming the value and the limit. */
static void test_limits(void **state)
{
    (void)state;
    kernel_reflection r = at_every_limit();
    ASSERT_OK(kernel_limits_check("k", &r, &lavapipe_like));
    r.info_buffer_size = CUBEC_KERNEL_MAX_INFO_BYTES;
    r.push_constant_size = 0;
    ASSERT_OK(kernel_limits_check("k", &r, &lavapipe_like));

    static const struct {
        const char *what;
        uint32_t wg[3];
        uint64_t shared;
        uint32_t push, info;
        int atomics;
        const char *message;
    } past[] = {
        {"x",
         {1025, 1, 1},
         0,
         0,
         0,
         0,
         "kernel 'k': workgroup size x = 1025 exceeds the device limit of 1024 "
         "(maxComputeWorkGroupSize[0])"},
        {"y",
         {1, 513, 1},
         0,
         0,
         0,
         0,
         "kernel 'k': workgroup size y = 513 exceeds the device limit of 512 "
         "(maxComputeWorkGroupSize[1])"},
        {"z",
         {1, 1, 65},
         0,
         0,
         0,
         0,
         "kernel 'k': workgroup size z = 65 exceeds the device limit of 64 "
         "(maxComputeWorkGroupSize[2])"},
        {"invocations",
         {1024, 2, 1},
         0,
         0,
         0,
         0,
         "kernel 'k': a workgroup of 1024 x 2 x 1 = 2048 invocations exceeds the device limit "
         "of 1024 (maxComputeWorkGroupInvocations)"},
        {"shared",
         {1, 1, 1},
         32769,
         0,
         0,
         0,
         "kernel 'k': 32769 bytes of shared (Workgroup) memory exceed the device limit of 32768 "
         "bytes (maxComputeSharedMemorySize)"},
        {"shared, huge",
         {1, 1, 1},
         UINT64_MAX,
         0,
         0,
         0,
         "kernel 'k': 18446744073709551615 bytes of shared (Workgroup) memory exceed"},
        {"push",
         {1, 1, 1},
         0,
         132,
         0,
         0,
         "kernel 'k': push-constant block of 132 bytes exceeds the device limit of 128 bytes "
         "(maxPushConstantsSize)"},
        {"info",
         {1, 1, 1},
         0,
         0,
         CUBEC_KERNEL_MAX_INFO_BYTES + 4,
         0,
         "kernel 'k': metadata (info) block of 524292 bytes exceeds cubec's limit of 524288 "
         "bytes (CUBEC_KERNEL_MAX_INFO_BYTES)"},
        {"shared int64 atomics",
         {1, 1, 1},
         8,
         0,
         0,
         1,
         "kernel 'k' needs SPIR-V capability Int64Atomics on shared (Workgroup) memory, which "
         "needs the Vulkan feature shaderSharedInt64Atomics"},
    };
    for (size_t i = 0; i < sizeof past / sizeof past[0]; i++) {
        memset(&r, 0, sizeof r);
        memcpy(r.workgroup_size, past[i].wg, sizeof r.workgroup_size);
        r.shared_memory_size = past[i].shared;
        r.push_constant_size = past[i].push;
        r.info_buffer_size = past[i].info;
        r.shared_int64_atomics = past[i].atomics;
        print_message("%s\n", past[i].what);
        ASSERT_ERROR(kernel_limits_check("k", &r, &lavapipe_like), CUBEC_UNSUPPORTED,
                     past[i].message);
    }

    /* A required subgroup size of 8 with lavapipe's 32 subgroups a workgroup: 256 invocations
     * pass, 257 do not (though maxComputeWorkGroupInvocations is 1024); without a required size,
     * or a larger one, 1024 pass. */
    kernel_limits sized = lavapipe_like;
    sized.required_subgroup_size = 8;
    sized.max_workgroup_subgroups = 32;
    memset(&r, 0, sizeof r);
    r.workgroup_size[0] = 256;
    r.workgroup_size[1] = r.workgroup_size[2] = 1;
    ASSERT_OK(kernel_limits_check("k", &r, &sized));
    r.workgroup_size[0] = 257;
    ASSERT_ERROR(kernel_limits_check("k", &r, &sized), CUBEC_UNSUPPORTED,
                 "kernel 'k': a workgroup of 257 x 1 x 1 = 257 invocations exceeds the device "
                 "limit of 256 with desc->required_subgroup_size 8 (maxComputeWorkgroupSubgroups: "
                 "32 subgroups a workgroup)");
    r.workgroup_size[0] = 1024;
    ASSERT_OK(kernel_limits_check("k", &r, &lavapipe_like));
    sized.required_subgroup_size = 32;
    ASSERT_OK(kernel_limits_check("k", &r, &sized));
}

/* The limits of a device info are its own, with cubec's metadata limit. */
static void test_limits_of_info(void **state)
{
    (void)state;
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    info.max_workgroup_size[0] = 1;
    info.max_workgroup_size[1] = 2;
    info.max_workgroup_size[2] = 3;
    info.max_workgroup_invocations = 4;
    info.max_shared_memory_size = 5;
    info.max_push_constants_size = 6;
    kernel_limits l = kernel_limits_of(&info);
    assert_int_equal(l.max_workgroup_size[0], 1);
    assert_int_equal(l.max_workgroup_size[1], 2);
    assert_int_equal(l.max_workgroup_size[2], 3);
    assert_int_equal(l.max_workgroup_invocations, 4);
    assert_int_equal(l.max_shared_memory_size, 5);
    assert_int_equal(l.max_push_constants_size, 6);
    assert_int_equal(l.max_info_size, 512 * 1024);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_specialized_sizes),
        cmocka_unit_test(test_overflow_saturates),
        cmocka_unit_test(test_spec_constant_expression),
        cmocka_unit_test(test_spec_op_evaluation),
        cmocka_unit_test(test_spec_constant_expression_refused),
        cmocka_unit_test(test_length_below_one),
        cmocka_unit_test(test_int64_atomics),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_limits_of_info),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
