/* Unit tests of kernel/glsl_compiler: GLSL -> SPIR-V with cubec's predefined macros. Every
 * compiled module is checked by reflecting it (kernel/reflect), so each test asserts on what the
 * SPIR-V really declares, not merely on the absence of an error. No Vulkan device is needed. */
#include "kernel/glsl_compiler.h"
#include "kernel/reflect.h"
#include "kernel_test_util.h"

/* cmocka.h needs these headers before it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The info block the kernels below declare with CUBEC_INFO(uint n; float a;): its std430 size is
 * the C struct's (two 4-byte scalars, no padding). */
typedef struct host_info {
    uint32_t n;
    float a;
} host_info;

/* One readonly, one read-write and one writeonly buffer, plus the info block. */
static const char three_buffers_src[] =
    "#version 450\n"
    "layout(local_size_x = 64, local_size_y = 1, local_size_z = 1) in;\n"
    "layout(std430, binding = 0) readonly buffer In { float x[]; };\n"
    "layout(std430, binding = 1) buffer Acc { float acc[]; };\n"
    "layout(std430, binding = 2) writeonly buffer Out { float y[]; };\n"
    "CUBEC_INFO(uint n; float a;)\n"
    "void main() {\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    if (i >= info.n) return;\n"
    "    acc[i] += x[i];\n"
    "    y[i] = info.a * x[i];\n"
    "}\n";

/* Reads the code of `status`, frees it, and returns the code. */
static cubec_code take_code(cubec_status status)
{
    cubec_code code = cubec_status_code(status);
    cubec_status_free(status);
    return code;
}

/* Compiles and reflects in one go; fails the test on any error. */
static void compile_reflect(glsl_compiler *c, const char *src, const cubec_define *defines,
                            uint32_t define_count, const char *entry_point, int optimize, int push,
                            kernel_reflection *out)
{
    uint32_t *words = NULL;
    size_t count = 0;
    expect_ok(glsl_compile(c, "test_kernel", src, defines, define_count, entry_point, optimize,
                           push, &words, &count));
    assert_non_null(words);
    assert_true(count > 5);
    assert_int_equal(words[0], 0x07230203u);
    expect_ok(kernel_reflect(words, count, entry_point, 0, out));
    free(words);
}

static void check_three_buffers(const kernel_reflection *r)
{
    assert_int_equal(r->binding_count, 3);
    assert_int_equal(r->access[0], CUBEC_ACCESS_READ);
    assert_int_equal(r->access[1], CUBEC_ACCESS_READ_WRITE);
    assert_int_equal(r->access[2], CUBEC_ACCESS_WRITE);
    assert_int_equal(r->workgroup_size[0], 64);
    assert_int_equal(r->workgroup_size[1], 1);
    assert_int_equal(r->workgroup_size[2], 1);
}

static void test_info_in_push_constants(void **state)
{
    kernel_reflection r;
    compile_reflect(*state, three_buffers_src, NULL, 0, "main", 0, 1, &r);
    check_three_buffers(&r);
    assert_int_equal(r.push_constant_size, sizeof(host_info));
    assert_int_equal(r.has_info_buffer, 0);
    assert_int_equal(r.info_buffer_size, 0);
}

static void test_info_in_storage_buffer(void **state)
{
    kernel_reflection r;
    compile_reflect(*state, three_buffers_src, NULL, 0, "main", 0, 0, &r);
    /* The info buffer sits at binding 31 and is not one of the launch's buffers. */
    check_three_buffers(&r);
    assert_int_equal(r.push_constant_size, 0);
    assert_int_equal(r.has_info_buffer, 1);
    assert_int_equal(r.info_buffer_size, sizeof(host_info));
}

/* The helper macros agree with the chosen layout: each branch declares a different number of
 * buffers, so a wrong value shows up in the binding count. */
static void test_info_macros(void **state)
{
    static const char src[] = "#version 450\n"
                              "layout(local_size_x = 1) in;\n"
                              "#if CUBEC_INFO_BINDING != 31\n"
                              "#error wrong CUBEC_INFO_BINDING\n"
                              "#endif\n"
                              "layout(std430, binding = 0) buffer A { uint a[]; };\n"
                              "#if CUBEC_INFO_IN_PUSH_CONSTANTS\n"
                              "layout(std430, binding = 1) buffer B { uint b[]; };\n"
                              "#endif\n"
                              "CUBEC_INFO(uint n;)\n"
                              "void main() { a[0] = info.n; }\n";
    for (int push = 0; push <= 1; push++) {
        kernel_reflection r;
        compile_reflect(*state, src, NULL, 0, "main", 0, push, &r);
        assert_int_equal(r.binding_count, push ? 2 : 1);
        assert_int_equal(r.push_constant_size, push ? 4 : 0);
        assert_int_equal(r.has_info_buffer, !push);
    }
}

static void test_defines_change_code(void **state)
{
    static const char src[] = "#version 450\n"
                              "layout(local_size_x = WG_X, local_size_y = WG_Y) in;\n"
                              "layout(std430, binding = 0) buffer A { uint a[]; };\n"
                              "#ifdef EXTRA_BUFFER\n"
                              "layout(std430, binding = 1) readonly buffer B { uint b[]; };\n"
                              "#endif\n"
                              "void main() { a[0] = SQUARE(3); }\n";
    const uint32_t wg_x = 128, wg_y = 2;
    char x_text[16], y_text[16];
    snprintf(x_text, sizeof x_text, "%u", wg_x);
    snprintf(y_text, sizeof y_text, "%u", wg_y);
    cubec_define defines[] = {
        {"WG_X", x_text},
        {"WG_Y", y_text},
        {"SQUARE(v)", "((v) * (v))"}, /* function-like user macro */
        {"EXTRA_BUFFER", NULL},       /* defined empty */
    };
    kernel_reflection r;
    compile_reflect(*state, src, defines, 4, "main", 0, 1, &r);
    assert_int_equal(r.workgroup_size[0], wg_x);
    assert_int_equal(r.workgroup_size[1], wg_y);
    assert_int_equal(r.workgroup_size[2], 1);
    assert_int_equal(r.binding_count, 2);
    assert_int_equal(r.access[1], CUBEC_ACCESS_READ);

    /* Without EXTRA_BUFFER and with another size, the module changes accordingly. */
    cubec_define fewer[] = {{"WG_X", "7"}, {"WG_Y", "3"}, {"SQUARE(v)", "((v) * (v))"}};
    compile_reflect(*state, src, fewer, 3, "main", 0, 1, &r);
    assert_int_equal(r.workgroup_size[0], 7);
    assert_int_equal(r.workgroup_size[1], 3);
    assert_int_equal(r.binding_count, 1);
}

/* The 1-based line of the first occurrence of `marker` in `src`. */
static int line_of(const char *src, const char *marker)
{
    const char *at = strstr(src, marker);
    assert_non_null(at);
    int line = 1;
    for (const char *p = src; p < at; p++)
        if (*p == '\n') line++;
    return line;
}

static void test_syntax_error_names_line(void **state)
{
    static const char src[] = "#version 450\n"
                              "layout(local_size_x = 1) in;\n"
                              "layout(std430, binding = 0) buffer A { float a[]; };\n"
                              "CUBEC_INFO(uint n;)\n"
                              "void main() {\n"
                              "    a[0] = 1.0 +* ;\n"
                              "}\n";
    int line = line_of(src, "+*");
    char where[64];
    snprintf(where, sizeof where, "bad_kernel:%d:", line);
    /* Every layout (the uniform one adds an #extension line after #version) and a user define in
     * front must leave the user's line numbers intact. */
    cubec_define defines[] = {{"UNUSED", "1"}};
    const glsl_info_form forms[] = {GLSL_INFO_STORAGE, GLSL_INFO_PUSH, GLSL_INFO_UNIFORM};
    for (int f = 0; f < 3; f++) {
        uint32_t *words = (uint32_t *)1;
        size_t count = 99;
        cubec_status s =
            glsl_compile(*state, "bad_kernel", src, defines, 1, NULL, 0, forms[f], &words, &count);
        assert_int_equal(cubec_status_code(s), CUBEC_COMPILE_FAILED);
        expect_contains(cubec_status_message(s), "kernel 'bad_kernel': GLSL compilation failed:\n");
        expect_contains(cubec_status_message(s), where);
        assert_null(words);
        assert_int_equal(count, 0);
        cubec_status_free(s);
    }
}

/* Without #version glslang would print its built-ins to stdout; the compiler refuses the source
 * first, with a line-numbered message of its own (glslang's lacks the line number). */
static void test_missing_version_fails(void **state)
{
    static const char *const sources[] = {
        "void main() {}\n",
        "// a comment\n#version 140\nvoid main() {}\n",
    };
    static const char *const where[] = {"k:1: error:", "k:2: error: #version 140"};
    for (int i = 0; i < 2; i++) {
        uint32_t *words = NULL;
        size_t count = 0;
        cubec_status s =
            glsl_compile(*state, "k", sources[i], NULL, 0, "main", 0, 1, &words, &count);
        assert_int_equal(cubec_status_code(s), CUBEC_COMPILE_FAILED);
        expect_contains(cubec_status_message(s), "kernel 'k': GLSL compilation failed:\n");
        expect_contains(cubec_status_message(s), where[i]);
        cubec_status_free(s);
        assert_null(words);
    }
}

/* -O must not change what a launch binds: spirv-opt deletes an untouched buffer and an unused
 * info block, and the compiler has to keep them. The first kernel has both an untouched buffer
 * and unused info; the second uses every buffer, so only the info block is at stake. */
static void test_optimize_keeps_bindings(void **state)
{
    static const char *const sources[] = {
        "#version 450\n"
        "layout(local_size_x = 32) in;\n"
        "layout(std430, binding = 0) readonly buffer A { float a[]; };\n"
        "layout(std430, binding = 1) buffer Unused { float u[]; };\n"
        "layout(std430, binding = 2) writeonly buffer B { float b[]; };\n"
        "CUBEC_INFO(uint n; float a;)\n"
        "void main() { b[gl_GlobalInvocationID.x] = a[0]; }\n",
        "#version 450\n"
        "layout(local_size_x = 32) in;\n"
        "layout(std430, binding = 0) readonly buffer A { float a[]; };\n"
        "layout(std430, binding = 1) writeonly buffer B { float b[]; };\n"
        "CUBEC_INFO(uint n; float a;)\n"
        "void main() { b[gl_GlobalInvocationID.x] = a[0]; }\n",
    };
    const uint32_t buffers[] = {3, 2};
    for (int i = 0; i < 2; i++) {
        for (int push = 0; push <= 1; push++) {
            kernel_reflection plain, opt;
            compile_reflect(*state, sources[i], NULL, 0, "main", 0, push, &plain);
            compile_reflect(*state, sources[i], NULL, 0, "main", 1, push, &opt);
            assert_int_equal(plain.binding_count, buffers[i]);
            assert_int_equal(push ? plain.push_constant_size : plain.info_buffer_size,
                             sizeof(host_info));
            assert_memory_equal(&plain, &opt, sizeof plain);
        }
    }
}

/* When -O keeps every resource, its output is used: it differs from the unoptimized module. */
static void test_optimize_used_when_safe(void **state)
{
    uint32_t *plain = NULL, *opt = NULL;
    size_t plain_count = 0, opt_count = 0;
    expect_ok(
        glsl_compile(*state, "k", three_buffers_src, NULL, 0, "main", 0, 1, &plain, &plain_count));
    expect_ok(
        glsl_compile(*state, "k", three_buffers_src, NULL, 0, "main", 1, 1, &opt, &opt_count));
    assert_true(plain_count != opt_count || memcmp(plain, opt, plain_count * sizeof *plain) != 0);
    kernel_reflection a, b;
    expect_ok(kernel_reflect(plain, plain_count, "main", 0, &a));
    expect_ok(kernel_reflect(opt, opt_count, "main", 0, &b));
    assert_memory_equal(&a, &b, sizeof a);
    free(plain);
    free(opt);
}

/* A source with two kernels: entry_point picks one, and the SPIR-V entry point carries its name. */
static void test_entry_point_selects_function(void **state)
{
    static const char src[] = "#version 450\n"
                              "layout(local_size_x = 16) in;\n"
                              "layout(std430, binding = 0) buffer A { float a[]; };\n"
                              "layout(std430, binding = 1) readonly buffer B { float b[]; };\n"
                              "void scale() { a[gl_GlobalInvocationID.x] *= 2.0; }\n"
                              "void add() { a[gl_GlobalInvocationID.x] += b[0]; }\n";
    uint32_t *words = NULL;
    size_t count = 0;
    expect_ok(glsl_compile(*state, "two", src, NULL, 0, "add", 1, 1, &words, &count));
    kernel_reflection r;
    expect_ok(kernel_reflect(words, count, "add", 0, &r));
    assert_int_equal(r.binding_count, 2);
    assert_int_equal(r.workgroup_size[0], 16);
    /* The entry point is "add" now, not "main". */
    assert_int_equal(take_code(kernel_reflect(words, count, "main", 0, &r)), CUBEC_INVALID_SPIRV);
    free(words);

    words = NULL;
    cubec_status s = glsl_compile(*state, "two", src, NULL, 0, "missing", 0, 1, &words, &count);
    assert_int_equal(cubec_status_code(s), CUBEC_COMPILE_FAILED);
    expect_contains(cubec_status_message(s), "'missing'");
    cubec_status_free(s);
    assert_null(words);
}

/* An entry_point must name a function `void name()` with a body, as the compiler sees the source
 * (after the preprocessor). A source that defines main but not that function used to compile
 * main silently; it is refused now, naming the entry point. */
static void test_entry_point_must_name_a_function(void **state)
{
    static const struct {
        const char *what;
        const char *body; /* after the buffer declaration */
        const char *entry_point;
        const char *refusal; /* NULL: compiles */
    } cases[] = {
        {"only main", "void main() { a[0] = 1.0; }\n", "nothere",
         "kernel 'k': entry_point 'nothere' names no function of the GLSL source (no definition "
         "of void nothere() after preprocessing)"},
        {"a declaration, no body", "void other();\nvoid main() { a[0] = 1.0; }\n", "other",
         "'other' names no function"},
        {"a variable of that name", "float other = 1.0;\nvoid main() { a[0] = other; }\n", "other",
         "(entry_point 'other' is compiled as main: 'main' in these messages is the entry "
         "point)"},
        {"in a comment", "// void other() {}\nvoid main() { a[0] = 1.0; }\n", "other",
         "'other' names no function"},
        {"left out by #ifdef",
         "#ifdef WITH_OTHER\nvoid other() { a[0] = 2.0; }\n#endif\n"
         "void main() { a[0] = 1.0; }\n",
         "other", "'other' names no function"},
        {"(void) parameter list", "void other(void) { a[0] = 2.0; }\n", "other", NULL},
        {"defined through a macro", "#define KERNEL(n) void n()\nKERNEL(other) { a[0] = 2.0; }\n",
         "other", NULL},
        {"with main too", "void other() { a[0] = 2.0; }\nvoid main() { a[0] = 1.0; }\n", "other",
         "(entry_point 'other' is compiled as main, so the source may not define main too)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        print_message("case: %s\n", cases[i].what);
        char src[1024];
        snprintf(src, sizeof src,
                 "#version 450\nlayout(local_size_x = 1) in;\n"
                 "layout(std430, binding = 0) buffer A { float a[]; };\n%s",
                 cases[i].body);
        uint32_t *words = NULL;
        size_t count = 0;
        cubec_status s =
            glsl_compile(*state, "k", src, NULL, 0, cases[i].entry_point, 0, 1, &words, &count);
        if (!cases[i].refusal) {
            expect_ok(s);
            kernel_reflection r;
            expect_ok(kernel_reflect(words, count, cases[i].entry_point, 0, &r));
            assert_int_equal(r.binding_count, 1);
            free(words);
            continue;
        }
        assert_int_equal(cubec_status_code(s), CUBEC_COMPILE_FAILED);
        expect_contains(cubec_status_message(s), cases[i].refusal);
        cubec_status_free(s);
        assert_null(words);
        assert_int_equal(count, 0);
    }
    /* The defines count: the function exists when WITH_OTHER is defined. */
    static const char guarded[] = "#version 450\nlayout(local_size_x = 1) in;\n"
                                  "layout(std430, binding = 0) buffer A { float a[]; };\n"
                                  "#ifdef WITH_OTHER\nvoid other() { a[0] = 2.0; }\n#endif\n";
    const cubec_define with = {"WITH_OTHER", NULL};
    uint32_t *words = NULL;
    size_t count = 0;
    expect_ok(glsl_compile(*state, "k", guarded, &with, 1, "other", 0, 1, &words, &count));
    free(words);
}

static void test_invalid_arguments(void **state)
{
    glsl_compiler *c = *state;
    uint32_t *words = (uint32_t *)1;
    size_t count = 7;
    struct {
        glsl_compiler *compiler;
        const char *source;
        const cubec_define *defines;
        uint32_t define_count;
        const char *entry_point;
        uint32_t **out_words;
        size_t *out_count;
        const char *named;
    } cases[] = {
        {NULL, three_buffers_src, NULL, 0, "main", &words, &count, "compiler"},
        {c, NULL, NULL, 0, "main", &words, &count, "source"},
        {c, three_buffers_src, NULL, 0, "main", NULL, &count, "out_words"},
        {c, three_buffers_src, NULL, 0, "main", &words, NULL, "out_word_count"},
        {c, three_buffers_src, NULL, 2, "main", &words, &count, "defines"},
        {c, three_buffers_src, (cubec_define[]){{NULL, "1"}}, 1, "main", &words, &count,
         "defines[0].name"},
        {c, three_buffers_src, (cubec_define[]){{"A", "1"}, {"1BAD", "1"}}, 2, "main", &words,
         &count, "defines[1].name"},
        {c, three_buffers_src, (cubec_define[]){{"CUBEC_INFO", "x"}}, 1, "main", &words, &count,
         "reserved"},
        {c, three_buffers_src, (cubec_define[]){{"X", "1\n#define Y 2"}}, 1, "main", &words, &count,
         "defines[0].value"},
        {c, three_buffers_src, NULL, 0, "not a name", &words, &count, "entry_point"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        words = (uint32_t *)1;
        count = 7;
        cubec_status s = glsl_compile(cases[i].compiler, "k", cases[i].source, cases[i].defines,
                                      cases[i].define_count, cases[i].entry_point, 0, 1,
                                      cases[i].out_words, cases[i].out_count);
        if (cubec_status_code(s) != CUBEC_INVALID_ARGUMENT) {
            print_error("case %zu: got %s\n", i, cubec_code_name(cubec_status_code(s)));
            cubec_status_free(s);
            fail();
        }
        expect_contains(cubec_status_message(s), cases[i].named);
        cubec_status_free(s);
        /* Out-parameters are cleared even on a refused call. */
        if (cases[i].out_words) assert_null(words);
        if (cases[i].out_count) assert_int_equal(count, 0);
    }
    assert_int_equal(take_code(glsl_compiler_create(NULL)), CUBEC_INVALID_ARGUMENT);
    glsl_compiler_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_info_in_push_constants),
        cmocka_unit_test(test_info_in_storage_buffer),
        cmocka_unit_test(test_info_macros),
        cmocka_unit_test(test_defines_change_code),
        cmocka_unit_test(test_syntax_error_names_line),
        cmocka_unit_test(test_missing_version_fails),
        cmocka_unit_test(test_optimize_keeps_bindings),
        cmocka_unit_test(test_optimize_used_when_safe),
        cmocka_unit_test(test_entry_point_selects_function),
        cmocka_unit_test(test_entry_point_must_name_a_function),
        cmocka_unit_test(test_invalid_arguments),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
