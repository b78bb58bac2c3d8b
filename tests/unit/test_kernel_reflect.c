/* Unit tests of kernel/reflect: validation and reflection of SPIR-V kernels. Modules come from
 * GLSL (through kernel/glsl_compiler) or, where glslang cannot produce the shape under test
 * (decorations on the variable, aliased bindings), from SPIR-V assembly assembled by SPIRV-Tools
 * in the test. No Vulkan device is needed. */
#include "kernel/glsl_compiler.h"
#include "kernel/reflect.h"
#include "kernel_test_util.h"

/* cmocka.h needs these headers before it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

/* libspirv.h defines (not declares) a const kDefaultMaxIdBound at file scope, which in C is an
 * external definition: two C files including it would clash at link time. A per-file name
 * avoids that. */
#define kDefaultMaxIdBound test_reflect_spirv_tools_max_id_bound_
#include <spirv-tools/libspirv.h>
#undef kDefaultMaxIdBound

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Asserts that reflecting fails with `code` and a message containing `needle`, and that the
 * out-parameter is left cleared. */
static void expect_refused_for(const uint32_t *words, size_t count, const char *entry_point,
                               uint32_t vulkan_version, cubec_code code, const char *needle)
{
    kernel_reflection r;
    memset(&r, 0xa5, sizeof r);
    cubec_status s = kernel_reflect(words, count, entry_point, vulkan_version, &r);
    if (cubec_status_code(s) != code) {
        print_error("expected %s, got %s: %s\n", cubec_code_name(code),
                    cubec_code_name(cubec_status_code(s)), cubec_status_message(s));
        cubec_status_free(s);
        fail();
    }
    expect_contains(cubec_status_message(s), needle);
    cubec_status_free(s);
    kernel_reflection zero;
    memset(&zero, 0, sizeof zero);
    assert_memory_equal(&r, &zero, sizeof r);
}

/* The same, validating for Vulkan 1.2 (what cubec uses today). */
static void expect_refused(const uint32_t *words, size_t count, const char *entry_point,
                           cubec_code code, const char *needle)
{
    expect_refused_for(words, count, entry_point, 0, code, needle);
}

typedef struct module {
    uint32_t *words;
    size_t count;
} module;

static module compile(void **state, const char *src, int push)
{
    module m = {NULL, 0};
    expect_ok(glsl_compile(*state, "k", src, NULL, 0, "main", 0, push, &m.words, &m.count));
    return m;
}

/* SPIR-V assembly -> words, for shapes glslang does not emit. */
static module assemble(const char *text)
{
    spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_2);
    assert_non_null(ctx);
    spv_binary binary = NULL;
    spv_diagnostic diag = NULL;
    spv_result_t r = spvTextToBinary(ctx, text, strlen(text), &binary, &diag);
    if (r != SPV_SUCCESS) {
        print_error("assembly failed: %s\n", diag && diag->error ? diag->error : "?");
        fail();
    }
    module m = {malloc(binary->wordCount * sizeof(uint32_t)), binary->wordCount};
    assert_non_null(m.words);
    memcpy(m.words, binary->code, m.count * sizeof(uint32_t));
    spvBinaryDestroy(binary);
    spvDiagnosticDestroy(diag);
    spvContextDestroy(ctx);
    return m;
}

static const char simple_src[] =
    "#version 450\n"
    "layout(local_size_x = 8, local_size_y = 4, local_size_z = 2) in;\n"
    "layout(std430, binding = 0) readonly buffer A { uint a[]; };\n"
    "layout(std430, binding = 1) writeonly buffer B { uint b[]; };\n"
    "CUBEC_INFO(uint n;)\n"
    "void main() { b[gl_LocalInvocationIndex] = a[0] + info.n; }\n";

static void test_simple_kernel(void **state)
{
    module m = compile(state, simple_src, 1);
    kernel_reflection r;
    expect_ok(kernel_reflect(m.words, m.count, "main", 0, &r));
    assert_int_equal(r.binding_count, 2);
    assert_int_equal(r.access[0], CUBEC_ACCESS_READ);
    assert_int_equal(r.access[1], CUBEC_ACCESS_WRITE);
    assert_int_equal(r.push_constant_size, sizeof(uint32_t));
    assert_int_equal(r.workgroup_size[0], 8);
    assert_int_equal(r.workgroup_size[1], 4);
    assert_int_equal(r.workgroup_size[2], 2);
    /* A NULL entry point means "main". */
    kernel_reflection r2;
    expect_ok(kernel_reflect(m.words, m.count, NULL, 0, &r2));
    assert_memory_equal(&r, &r2, sizeof r);
    free(m.words);
}

/* The module's OpCapability declarations are reported, in order, for kernel/capabilities. */
/* Every kind of resource besides buffers, told apart: SPIRV-Cross lists texel buffers as
 * storage or sampled images (or separate images) of dimension Buffer. Those with memory come
 * first; each sampler knows the textures it samples. */
static const char resources_src[] =
    "#version 450\nlayout(local_size_x = 1) in;\n"
    "layout(std430, binding = 0) buffer A { vec4 a[]; };\n"
    "layout(binding = 1, r32ui) uniform writeonly uimageBuffer sb;\n"
    "layout(binding = 2) uniform isamplerBuffer ub;\n"
    "layout(set = 2, binding = 0) uniform textureBuffer tb;\n"
    "layout(binding = 3) uniform sampler s0;\n"
    "layout(binding = 4) uniform texture2D t0;\n"
    "layout(binding = 5) uniform texture3D t1;\n"
    "layout(binding = 6) uniform sampler s1;\n"
    "layout(binding = 7, rgba8) uniform readonly image2D im;\n"
    "void main() {\n"
    "  imageStore(sb, 0, uvec4(texelFetch(ub, 0).r));\n"
    "  a[0] = texelFetch(tb, 0) + textureLod(sampler2D(t0, s1), vec2(0.5), 0.0) +\n"
    "         textureLod(sampler3D(t1, s1), vec3(0.5), 0.0) + imageLoad(im, ivec2(0));\n"
    "}\n";

static void test_resources(void **state)
{
    module m = compile(state, resources_src, 1);
    kernel_reflection r;
    expect_ok(kernel_reflect(m.words, m.count, "main", 0, &r));
    assert_int_equal(r.resource_count, 8);
    assert_int_equal(r.memory_resource_count, 6);
    assert_int_equal(r.set_count, 3);
    int seen = 0;
    for (uint32_t k = 0; k < r.resource_count; k++) {
        const kernel_resource *x = &r.resources[k];
        if (k >= r.memory_resource_count) assert_int_equal(x->kind, CUBEC_RESOURCE_SAMPLER);
        if (x->set == 0 && x->binding == 1) {
            assert_int_equal(x->kind, CUBEC_RESOURCE_STORAGE_TEXEL_BUFFER);
            assert_int_equal(x->format, CUBEC_IMAGE_FORMAT_R32_UINT);
            assert_int_equal(x->numeric, KERNEL_NUMERIC_UINT);
            assert_int_equal(x->access, CUBEC_ACCESS_WRITE);
            assert_int_equal(x->dims, 1);
        } else if (x->set == 0 && x->binding == 2) {
            assert_int_equal(x->kind, CUBEC_RESOURCE_UNIFORM_TEXEL_BUFFER);
            assert_int_equal(x->format, 0);
            assert_int_equal(x->numeric, KERNEL_NUMERIC_SINT);
            assert_int_equal(x->access, CUBEC_ACCESS_READ);
        } else if (x->set == 2 && x->binding == 0) {
            assert_int_equal(x->kind, CUBEC_RESOURCE_UNIFORM_TEXEL_BUFFER);
            assert_int_equal(x->numeric, KERNEL_NUMERIC_FLOAT);
        } else if (x->binding == 4 || x->binding == 5) {
            assert_int_equal(x->kind, CUBEC_RESOURCE_SAMPLED_TEXTURE);
            assert_int_equal(x->dims, x->binding == 4 ? 2 : 3);
        } else if (x->binding == 7) {
            assert_int_equal(x->kind, CUBEC_RESOURCE_STORAGE_IMAGE);
            assert_int_equal(x->format, CUBEC_IMAGE_FORMAT_RGBA8_UNORM);
            assert_int_equal(x->access, CUBEC_ACCESS_READ);
        } else if (x->binding == 3) {
            assert_int_equal(x->samples, 0); /* declared, samples nothing */
        } else if (x->binding == 6) {
            uint32_t want = 0;
            for (uint32_t j = 0; j < r.memory_resource_count; j++)
                if (r.resources[j].binding == 4 || r.resources[j].binding == 5) want |= 1u << j;
            assert_int_equal(x->samples, want);
        } else {
            fail_msg("unexpected resource at set %u binding %u", x->set, x->binding);
        }
        seen |= 1 << (x->set * 8 + x->binding);
    }
    assert_int_equal(seen, 0xfe | 1 << 16);
    free(m.words);
}

static void test_capabilities(void **state)
{
    static const char src16[] = "#version 450\n"
                                "#extension GL_EXT_shader_16bit_storage : require\n"
                                "layout(local_size_x = 1) in;\n"
                                "layout(std430, binding = 0) buffer A { float16_t a[]; };\n"
                                "void main() { a[0] = float16_t(float(a[1]) + 1.0); }\n";
    module m = compile(state, src16, 1);
    kernel_reflection r;
    expect_ok(kernel_reflect(m.words, m.count, "main", 0, &r));
    assert_int_equal(r.capability_count, 2);
    assert_int_equal(r.capabilities[0], 1);    /* Shader */
    assert_int_equal(r.capabilities[1], 4433); /* StorageBuffer16BitAccess */
    free(m.words);
    m = compile(state, simple_src, 1);
    expect_ok(kernel_reflect(m.words, m.count, "main", 0, &r));
    assert_int_equal(r.capability_count, 1);
    assert_int_equal(r.capabilities[0], 1);
    free(m.words);
}

static void test_bad_arguments(void **state)
{
    module m = compile(state, simple_src, 1);
    cubec_status s = kernel_reflect(m.words, m.count, "main", 0, NULL);
    assert_int_equal(cubec_status_code(s), CUBEC_INVALID_ARGUMENT);
    expect_contains(cubec_status_message(s), "out");
    cubec_status_free(s);
    expect_refused(NULL, 5, "main", CUBEC_INVALID_ARGUMENT, "words");
    expect_refused(NULL, 0, "main", CUBEC_INVALID_SPIRV, "empty");
    expect_refused(m.words, 0, "main", CUBEC_INVALID_SPIRV, "empty");
    free(m.words);
}

static void test_garbage_words(void **state)
{
    (void)state;
    uint32_t words[64];
    uint32_t x = 12345;
    for (size_t i = 0; i < 64; i++) {
        x = x * 1664525u + 1013904223u;
        words[i] = x;
    }
    expect_refused(words, 64, "main", CUBEC_INVALID_SPIRV, "magic");
    /* With the magic in front the validator has to catch it. */
    words[0] = 0x07230203u;
    expect_refused(words, 64, "main", CUBEC_INVALID_SPIRV, "validation failed");
}

static void test_no_magic(void **state)
{
    module m = compile(state, simple_src, 1);
    m.words[0] = 0xdeadbeefu;
    expect_refused(m.words, m.count, "main", CUBEC_INVALID_SPIRV, "0xdeadbeef");
    m.words[0] = 0x03022307u; /* the magic, byte-swapped */
    expect_refused(m.words, m.count, "main", CUBEC_INVALID_SPIRV, "byte-swapped");
    free(m.words);
}

static void test_truncated(void **state)
{
    module m = compile(state, simple_src, 1);
    expect_refused(m.words, 3, "main", CUBEC_INVALID_SPIRV, "header");
    expect_refused(m.words, m.count / 2, "main", CUBEC_INVALID_SPIRV, "validation failed");
    expect_refused(m.words, m.count - 1, "main", CUBEC_INVALID_SPIRV, "validation failed");
    free(m.words);
}

static void test_wrong_entry_point(void **state)
{
    module m = compile(state, simple_src, 1);
    expect_refused(m.words, m.count, "other", CUBEC_INVALID_SPIRV, "'other'");
    free(m.words);
}

/* Each source violates one rule; the message must say which. */
static void test_layout_rules(void **state)
{
    static const struct {
        const char *what;
        int push;
        const char *src;
        const char *needle;
    } cases[] = {
        {"set 4", 1,
         "#version 450\nlayout(local_size_x = 1) in;\n"
         "layout(std430, set = 4, binding = 0) buffer A { uint a[]; };\n"
         "void main() { a[0] = 1u; }\n",
         "descriptor set 4"},
        {"33 slots over two sets", 1,
         "#version 450\nlayout(local_size_x = 1) in;\n"
         "layout(std430, set = 0, binding = 20) buffer A { uint a[]; };\n"
         "layout(std430, set = 1, binding = 11) buffer B { uint b[]; };\n"
         "void main() { a[0] = b[0]; }\n",
         "33 buffer slots"},
        /* Images are accepted in sets 0..3 (docs/images.md); these are not. */
        {"storage image in set 4", 1,
         "#version 450\nlayout(local_size_x = 1) in;\n"
         "layout(set = 4, binding = 0, r32f) uniform image2D img;\n"
         "void main() { imageStore(img, ivec2(0), vec4(1.0)); }\n",
         "storage image 'img' is in descriptor set 4"},
        {"array of storage images", 1,
         "#version 450\nlayout(local_size_x = 1) in;\n"
         "layout(binding = 0, r32f) uniform image2D imgs[2];\n"
         "void main() { imageStore(imgs[1], ivec2(0), vec4(1.0)); }\n",
         "is an array of images"},
        {"storage image on a buffer's binding", 1,
         "#version 450\nlayout(local_size_x = 1) in;\n"
         "layout(std430, binding = 0) buffer A { float a[]; };\n"
         "layout(std430, binding = 1) buffer B { float b[]; };\n"
         "layout(binding = 1, r32f) uniform image2D img;\n"
         "void main() { imageStore(img, ivec2(0), vec4(a[0] + b[0])); }\n",
         "storage image 'img' is at set 0 binding 1, which a buffer also declares"},
        {"array of samplers", 1,
         "#version 450\nlayout(local_size_x = 1) in;\n"
         "layout(std430, binding = 0) buffer A { vec4 a[]; };\n"
         "layout(binding = 1) uniform texture2D t;\n"
         "layout(binding = 2) uniform sampler s[2];\n"
         "void main() { a[0] = textureLod(sampler2D(t, s[1]), vec2(0.5), 0.0); }\n",
         "sampler 's' at binding 2 is an array of images or samplers"},
        {"texel buffer on a buffer's binding", 1,
         "#version 450\nlayout(local_size_x = 1) in;\n"
         "layout(std430, binding = 0) buffer A { vec4 a[]; };\n"
         "layout(binding = 0) uniform samplerBuffer t;\n"
         "void main() { a[0] = texelFetch(t, 0); }\n",
         "sampled image 't' is at set 0 binding 0, which a buffer also declares"},
        {"binding 32", 1,
         "#version 450\nlayout(local_size_x = 1) in;\n"
         "layout(std430, binding = 32) buffer A { uint a[]; };\n"
         "void main() { a[0] = 1u; }\n",
         "binding 32"},
        {"array of buffers", 1,
         "#version 450\nlayout(local_size_x = 1) in;\n"
         "layout(std430, binding = 0) buffer A { uint a[]; } bufs[2];\n"
         "void main() { bufs[1].a[0] = 1u; }\n",
         "array of buffers"},
        {"runtime info", 1,
         "#version 450\nlayout(local_size_x = 1) in;\n"
         "layout(std430, binding = 0) buffer A { uint a[]; };\n"
         "layout(std430, binding = 31) readonly buffer I { uint n; uint rest[]; } inf;\n"
         "void main() { a[0] = inf.n; }\n",
         "runtime-sized"},
        {"writable info", 1,
         "#version 450\nlayout(local_size_x = 1) in;\n"
         "layout(std430, binding = 0) buffer A { uint a[]; };\n"
         "layout(std430, binding = 31) buffer I { uint n; } inf;\n"
         "void main() { a[0] = inf.n; }\n",
         "writable"},
        {"info twice", 0,
         "#version 450\nlayout(local_size_x = 1) in;\n"
         "layout(std430, binding = 0) buffer A { uint a[]; };\n"
         "layout(push_constant) uniform P { uint m; } pc;\n"
         "CUBEC_INFO(uint n;)\n"
         "void main() { a[0] = info.n + pc.m; }\n",
         "both a push-constant block and an info buffer"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        print_message("case: %s\n", cases[i].what);
        module m = compile(state, cases[i].src, cases[i].push);
        expect_refused(m.words, m.count, "main", CUBEC_INVALID_SPIRV, cases[i].needle);
        free(m.words);
    }
}

/* The layout as written (issue 24): a gap an optimizer left is an unused slot, uniform blocks take
 * slots like storage blocks, and set 1 follows set 0's highest binding. */
static void test_layout_as_written(void **state)
{
    module m = compile(state,
                       "#version 450\nlayout(local_size_x = 1) in;\n"
                       "layout(std430, binding = 0) readonly buffer A { uint a[]; };\n"
                       "layout(std140, binding = 2) uniform U { uvec4 u; float f; };\n"
                       "layout(std430, binding = 3) writeonly buffer C { uint c[]; };\n"
                       "layout(std430, set = 2, binding = 1) buffer D { uint d[]; };\n"
                       "void main() { c[0] = a[0] + u.x + uint(f); d[0] += 1u; }\n",
                       1);
    kernel_reflection r;
    expect_ok(kernel_reflect(m.words, m.count, "main", 0, &r));
    /* Set 0 takes slots 0..3 (binding 1 unused); set 2 takes 4..5 (binding 0 unused). */
    assert_int_equal(r.binding_count, 6);
    assert_int_equal(r.set_count, 3);
    static const struct {
        uint8_t kind, set, binding;
        cubec_access access;
    } want[6] = {
        {KERNEL_SLOT_STORAGE, 0, 0, CUBEC_ACCESS_READ},
        {KERNEL_SLOT_UNUSED, 0, 0, 0},
        {KERNEL_SLOT_UNIFORM, 0, 2, CUBEC_ACCESS_READ},
        {KERNEL_SLOT_STORAGE, 0, 3, CUBEC_ACCESS_WRITE},
        {KERNEL_SLOT_UNUSED, 0, 0, 0},
        {KERNEL_SLOT_STORAGE, 2, 1, CUBEC_ACCESS_READ_WRITE},
    };
    for (int i = 0; i < 6; i++) {
        print_message("slot %d\n", i);
        assert_int_equal(r.slots[i].kind, want[i].kind);
        assert_int_equal(r.access[i], want[i].access);
        if (want[i].kind == KERNEL_SLOT_UNUSED) continue;
        assert_int_equal(r.slots[i].set, want[i].set);
        assert_int_equal(r.slots[i].binding, want[i].binding);
    }
    /* std140: a uvec4 then a float, 20 bytes as declared. */
    assert_int_equal(r.slots[2].block_size, 20);
    assert_int_equal(r.has_info_buffer, 0);
    free(m.words);
}

/* 31 user buffers (0..30) is the most there can be; binding 31 is then taken by info. */
static void test_max_bindings(void **state)
{
    char src[8192];
    size_t n = (size_t)snprintf(src, sizeof src, "#version 450\nlayout(local_size_x = 1) in;\n");
    const uint32_t count = CUBEC_INFO_BINDING;
    for (uint32_t b = 0; b < count; b++)
        n += (size_t)snprintf(src + n, sizeof src - n,
                              "layout(std430, binding = %u) %s buffer B%u { uint v%u[]; };\n", b,
                              b % 3 == 0   ? "readonly"
                              : b % 3 == 1 ? "writeonly"
                                           : "",
                              b, b);
    n += (size_t)snprintf(src + n, sizeof src - n, "CUBEC_INFO(uint n; uint m; float x;)\n");
    snprintf(src + n, sizeof src - n, "void main() { v1[0] = v0[0] + info.n; }\n");
    module m = compile(state, src, 0);
    kernel_reflection r;
    expect_ok(kernel_reflect(m.words, m.count, "main", 0, &r));
    assert_int_equal(r.binding_count, count);
    for (uint32_t b = 0; b < count; b++) {
        cubec_access want = b % 3 == 0   ? CUBEC_ACCESS_READ
                            : b % 3 == 1 ? CUBEC_ACCESS_WRITE
                                         : CUBEC_ACCESS_READ_WRITE;
        assert_int_equal(r.access[b], want);
    }
    assert_int_equal(r.has_info_buffer, 1);
    assert_int_equal(r.info_buffer_size, 3 * 4);
    free(m.words);
}

static void test_no_resources(void **state)
{
    module m = compile(state,
                       "#version 450\nlayout(local_size_x = 1, local_size_y = 1, "
                       "local_size_z = 5) in;\nshared uint s;\nvoid main() { s = 1u; }\n",
                       1);
    kernel_reflection r;
    expect_ok(kernel_reflect(m.words, m.count, "main", 0, &r));
    assert_int_equal(r.binding_count, 0);
    assert_int_equal(r.push_constant_size, 0);
    assert_int_equal(r.has_info_buffer, 0);
    assert_int_equal(r.workgroup_size[2], 5);
    free(m.words);
}

/* The push-constant size is the declared (std430) size: a vec4 after a uint starts at 16. */
static void test_push_constant_size(void **state)
{
    module m = compile(state,
                       "#version 450\nlayout(local_size_x = 1) in;\n"
                       "layout(std430, binding = 0) buffer A { vec4 a[]; };\n"
                       "CUBEC_INFO(uint n; vec4 v; uint tail;)\n"
                       "void main() { a[0] = info.v * float(info.n + info.tail); }\n",
                       1);
    const uint32_t vec4_offset = 16, tail_offset = vec4_offset + 16;
    kernel_reflection r;
    expect_ok(kernel_reflect(m.words, m.count, "main", 0, &r));
    assert_int_equal(r.push_constant_size, tail_offset + 4);
    free(m.words);
}

/* When the kernel uses gl_WorkGroupSize, glslang emits the WorkgroupSize built-in constant, which
 * takes precedence over LocalSize; both agree here. */
static void test_workgroup_size_builtin(void **state)
{
    module m = compile(state,
                       "#version 450\nlayout(local_size_x = 32, local_size_y = 2) in;\n"
                       "layout(std430, binding = 0) buffer A { uint a[]; };\n"
                       "void main() { a[0] = gl_WorkGroupSize.x * gl_WorkGroupSize.y; }\n",
                       1);
    kernel_reflection r;
    expect_ok(kernel_reflect(m.words, m.count, "main", 0, &r));
    assert_int_equal(r.workgroup_size[0], 32);
    assert_int_equal(r.workgroup_size[1], 2);
    assert_int_equal(r.workgroup_size[2], 1);
    free(m.words);
}

/* A workgroup size from specialization constants (local_size_x_id, local_size_z_id) is reflected
 * with the defaults, each dimension noting its constant, and specialized to the values given; a
 * shared array sized by an expression of the same constant follows. glslang gives the workgroup
 * size's constants a default of 1 of their own, whatever BX's declared default (the driver runs
 * an unspecialized pipeline with x = 1), so the defaults are 1 x 2 x 1 while tile has 129. */
static void test_workgroup_size_from_spec_constants(void **state)
{
    module m = compile(state,
                       "#version 450\nlayout(local_size_x_id = 3, local_size_y = 2, "
                       "local_size_z_id = 5) in;\n"
                       "layout(constant_id = 3) const uint BX = 64;\n"
                       "layout(constant_id = 5) const uint BZ = 1;\n"
                       "layout(std430, binding = 0) buffer A { uint a[]; };\n"
                       "shared uint tile[BX * 2u + 1u];\n"
                       "void main() { tile[gl_LocalInvocationIndex] = 1u; barrier();\n"
                       "  a[0] = tile[0] + gl_WorkGroupSize.x; }\n",
                       1);
    kernel_reflection r;
    expect_ok(kernel_reflect(m.words, m.count, "main", 0, &r));
    const uint32_t defaults[3] = {1, 2, 1};
    assert_memory_equal(r.workgroup_size, defaults, sizeof defaults);
    assert_int_equal(r.workgroup_size_spec[0], 3 + 1);
    assert_int_equal(r.workgroup_size_spec[1], 0);
    assert_int_equal(r.workgroup_size_spec[2], 5 + 1);
    assert_int_equal(r.shared_memory_size, 4 * (64 * 2 + 1));
    const cubec_spec_constant given[] = {{5, 4}, {3, 16}};
    expect_ok(kernel_reflect_specialize(m.words, m.count, given, 2, &r));
    const uint32_t specialized[3] = {16, 2, 4};
    assert_memory_equal(r.workgroup_size, specialized, sizeof specialized);
    assert_int_equal(r.shared_memory_size, 4 * (16 * 2 + 1));
    /* A dimension of 0 is no workgroup: refused naming the constant and the value. */
    const cubec_spec_constant zero[] = {{5, 0}};
    cubec_status err = kernel_reflect_specialize(m.words, m.count, zero, 1, &r);
    assert_int_equal(cubec_status_code(err), CUBEC_INVALID_ARGUMENT);
    assert_non_null(
        strstr(cubec_status_message(err), "workgroup size z is specialization constant 5 = 0"));
    cubec_status_free(err);
    free(m.words);
}

/* The WorkgroupSize built-in overrides LocalSize (SPIR-V specification, BuiltIn WorkgroupSize). */
static void test_workgroup_size_builtin_overrides(void **state)
{
    (void)state;
    const uint32_t want[3] = {16, 2, 3};
    char text[2048];
    snprintf(text, sizeof text,
             "OpCapability Shader\n"
             "OpMemoryModel Logical GLSL450\n"
             "OpEntryPoint GLCompute %%main \"main\"\n"
             "OpExecutionMode %%main LocalSize 1 1 1\n"
             "OpDecorate %%wgs BuiltIn WorkgroupSize\n"
             "%%void = OpTypeVoid\n"
             "%%fn = OpTypeFunction %%void\n"
             "%%uint = OpTypeInt 32 0\n"
             "%%v3 = OpTypeVector %%uint 3\n"
             "%%cx = OpConstant %%uint %u\n"
             "%%cy = OpConstant %%uint %u\n"
             "%%cz = OpConstant %%uint %u\n"
             "%%wgs = OpConstantComposite %%v3 %%cx %%cy %%cz\n"
             "%%main = OpFunction %%void None %%fn\n"
             "%%entry = OpLabel\n"
             "OpReturn\n"
             "OpFunctionEnd\n",
             want[0], want[1], want[2]);
    module m = assemble(text);
    kernel_reflection r;
    expect_ok(kernel_reflect(m.words, m.count, "main", 0, &r));
    assert_memory_equal(r.workgroup_size, want, sizeof want);
    free(m.words);
}

/* One storage buffer of a two-member block; the decorations are spliced in. */
static const char decorated_template[] = "OpCapability Shader\n"
                                         "OpMemoryModel Logical GLSL450\n"
                                         "OpEntryPoint GLCompute %%main \"main\" %%var %%var2\n"
                                         "OpExecutionMode %%main LocalSize 4 1 1\n"
                                         "OpDecorate %%S Block\n"
                                         "OpMemberDecorate %%S 0 Offset 0\n"
                                         "OpMemberDecorate %%S 1 Offset 4\n"
                                         "OpDecorate %%var DescriptorSet 0\n"
                                         "OpDecorate %%var Binding 0\n"
                                         "OpDecorate %%var2 DescriptorSet 0\n"
                                         "OpDecorate %%var2 Binding %u\n"
                                         "%s"
                                         "%%void = OpTypeVoid\n"
                                         "%%fn = OpTypeFunction %%void\n"
                                         "%%uint = OpTypeInt 32 0\n"
                                         "%%S = OpTypeStruct %%uint %%uint\n"
                                         "%%ptr = OpTypePointer StorageBuffer %%S\n"
                                         "%%var = OpVariable %%ptr StorageBuffer\n"
                                         "%%var2 = OpVariable %%ptr StorageBuffer\n"
                                         "%%main = OpFunction %%void None %%fn\n"
                                         "%%entry = OpLabel\n"
                                         "OpReturn\n"
                                         "OpFunctionEnd\n";

static void test_access_decoration_placement(void **state)
{
    (void)state;
    /* %var2 sits at binding 1 unless a case aliases it onto binding 0. */
    static const struct {
        const char *what;
        unsigned var2_binding;
        const char *decorations;
        cubec_access want0;
    } cases[] = {
        {"none", 1, "", CUBEC_ACCESS_READ_WRITE},
        {"NonWritable on the variable", 1, "OpDecorate %var NonWritable\n", CUBEC_ACCESS_READ},
        {"NonReadable on the variable", 1, "OpDecorate %var NonReadable\n", CUBEC_ACCESS_WRITE},
        {"NonWritable on every member", 1,
         "OpMemberDecorate %S 0 NonWritable\nOpMemberDecorate %S 1 NonWritable\n",
         CUBEC_ACCESS_READ},
        {"NonWritable on one member", 1, "OpMemberDecorate %S 0 NonWritable\n",
         CUBEC_ACCESS_READ_WRITE},
        {"both on the variable", 1, "OpDecorate %var NonWritable\nOpDecorate %var NonReadable\n",
         CUBEC_ACCESS_READ},
        {"aliased read and write", 0, "OpDecorate %var NonWritable\nOpDecorate %var2 NonReadable\n",
         CUBEC_ACCESS_READ_WRITE},
        {"aliased read and read", 0, "OpDecorate %var NonWritable\nOpDecorate %var2 NonWritable\n",
         CUBEC_ACCESS_READ},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        print_message("case: %s\n", cases[i].what);
        char text[4096];
        snprintf(text, sizeof text, decorated_template, cases[i].var2_binding,
                 cases[i].decorations);
        module m = assemble(text);
        kernel_reflection r;
        expect_ok(kernel_reflect(m.words, m.count, "main", 0, &r));
        assert_int_equal(r.binding_count, cases[i].var2_binding + 1);
        assert_int_equal(r.access[0], cases[i].want0);
        assert_int_equal(r.workgroup_size[0], 4);
        free(m.words);
    }
}

/* A vertex shader is valid SPIR-V but not a kernel. */
static void test_not_compute(void **state)
{
    (void)state;
    module m = assemble("OpCapability Shader\n"
                        "OpMemoryModel Logical GLSL450\n"
                        "OpEntryPoint Vertex %main \"main\"\n"
                        "%void = OpTypeVoid\n"
                        "%fn = OpTypeFunction %void\n"
                        "%main = OpFunction %void None %fn\n"
                        "%entry = OpLabel\n"
                        "OpReturn\n"
                        "OpFunctionEnd\n");
    expect_refused(m.words, m.count, "main", CUBEC_INVALID_SPIRV, "not GLCompute");
    free(m.words);
}

/* The validator's environment follows the Vulkan version cubec uses on the device: SPIR-V 1.6
 * is Vulkan 1.3's, so it is refused for 1.2 (what cubec uses today, 0) and accepted for 1.3;
 * SPIR-V 1.5 is refused for 1.1. The message says which version it was checked for and quotes
 * the validator. */
static void test_vulkan_version(void **state)
{
    const uint32_t v1_1 = (1u << 22) | (1u << 12), v1_3 = (1u << 22) | (3u << 12);
    module m = compile(state, simple_src, 1);
    kernel_reflection r;
    expect_refused_for(m.words, m.count, "main", v1_1, CUBEC_INVALID_SPIRV,
                       "SPIR-V validation failed (Vulkan 1.1): Invalid SPIR-V binary version 1.5");
    expect_ok(kernel_reflect(m.words, m.count, "main", KERNEL_VULKAN_DEFAULT, &r));
    m.words[1] = 0x00010600u; /* SPIR-V 1.6 */
    expect_refused_for(m.words, m.count, "main", 0, CUBEC_INVALID_SPIRV,
                       "SPIR-V validation failed (Vulkan 1.2): Invalid SPIR-V binary version 1.6");
    expect_ok(kernel_reflect(m.words, m.count, "main", v1_3, &r));
    assert_int_equal(r.binding_count, 2);
    /* A later Vulkan version is validated as 1.3, the newest the validator knows here. */
    expect_ok(kernel_reflect(m.words, m.count, "main", (1u << 22) | (4u << 12), &r));
    free(m.words);
}

/* The shared memory a kernel declares is reported (kernel/workgroup_memory.c counts it). */
static void test_shared_memory(void **state)
{
    static const char src[] = "#version 450\n"
                              "layout(local_size_x = 64) in;\n"
                              "layout(std430, binding = 0) buffer A { uint a[]; };\n"
                              "shared uint tile[100];\n"
                              "shared vec3 v[2];\n"
                              "void main() {\n"
                              "  uint i = gl_LocalInvocationID.x;\n"
                              "  tile[i] = a[i]; v[i % 2u] = vec3(1.0); barrier();\n"
                              "  a[i] = tile[63u - i] + uint(v[0].x);\n"
                              "}\n";
    module m = compile(state, src, 1);
    kernel_reflection r;
    expect_ok(kernel_reflect(m.words, m.count, "main", 0, &r));
    assert_int_equal(r.shared_memory_size, 400 + 24);
    assert_int_equal(r.shared_int64_atomics, 0);
    free(m.words);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_simple_kernel),
        cmocka_unit_test(test_capabilities),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_garbage_words),
        cmocka_unit_test(test_no_magic),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_wrong_entry_point),
        cmocka_unit_test(test_layout_rules),
        cmocka_unit_test(test_max_bindings),
        cmocka_unit_test(test_layout_as_written),
        cmocka_unit_test(test_no_resources),
        cmocka_unit_test(test_push_constant_size),
        cmocka_unit_test(test_workgroup_size_builtin),
        cmocka_unit_test(test_workgroup_size_builtin_overrides),
        cmocka_unit_test(test_workgroup_size_from_spec_constants),
        cmocka_unit_test(test_access_decoration_placement),
        cmocka_unit_test(test_not_compute),
        cmocka_unit_test(test_vulkan_version),
        cmocka_unit_test(test_shared_memory),
        cmocka_unit_test(test_resources),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
