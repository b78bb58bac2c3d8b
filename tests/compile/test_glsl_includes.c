/* GLSL as projects keep it (docs/kernels.md, "Bringing existing shaders"): #include resolved
 * next to the including file and in include_dirs, a preamble after #version, the caller's
 * defines with both, and kernel identities (memory and disk caches) that hold every included
 * file's bytes. Kernels run on the device and are checked against the CPU. */
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

enum { N = 256 };

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[1024];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) fail_msg("long path");
    FILE *f = fopen(path, "w");
    if (!f) fail_msg("cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

static void make_dir(const char *dir, const char *name)
{
    char path[1024];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) fail_msg("long path");
    if (mkdir(path, 0700) != 0) fail_msg("cannot make %s", path);
}

/* The kernel: y[i] = f(x[i]) with f from the included files. */
static const char main_source[] = "#version 450\n"
                                  "#include \"lib/ops.glsl\"\n"
                                  "#include <types.glsl>\n"
                                  "layout(local_size_x = 64) in;\n"
                                  "layout(std430, binding = 0) readonly buffer X { float x[]; };\n"
                                  "layout(std430, binding = 1) writeonly buffer Y { float y[]; };\n"
                                  "void main() {\n"
                                  "    uint i = gl_GlobalInvocationID.x;\n"
                                  "    if (i < N_ELEMS) y[i] = apply(x[i]);\n"
                                  "}\n";

/* A project tree under `root`: kernels/main.comp, kernels/lib/ops.glsl (found next to main.comp)
 * which includes scale.glsl (next to itself: kernels/lib/scale.glsl), and inc/types.glsl (found
 * through the include directory). SCALE comes from the caller's define. */
static void make_project(const char *root, const char *scale_body)
{
    make_dir(root, "kernels");
    make_dir(root, "kernels/lib");
    make_dir(root, "inc");
    write_file(root, "kernels/main.comp", main_source);
    write_file(root, "kernels/lib/ops.glsl",
               "#include \"scale.glsl\"\n"
               "float apply(float v) { return scaled(v) + OFFSET; }\n");
    write_file(root, "kernels/lib/scale.glsl", scale_body);
    write_file(root, "inc/types.glsl", "#define N_ELEMS 256u\n");
}

static const char scale_twice[] = "float scaled(float v) { return v * SCALE; }\n";
static const char scale_thrice[] = "float scaled(float v) { return v * SCALE * 1.5; }\n";

typedef struct project {
    char root[256], main_path[512], inc_dir[512];
    const char *dirs[1];
    cubec_define defines[2];
    cubec_kernel_desc desc;
} project;

static void project_desc(project *p)
{
    if (snprintf(p->main_path, sizeof p->main_path, "%s/kernels/main.comp", p->root) >=
            (int)sizeof p->main_path ||
        snprintf(p->inc_dir, sizeof p->inc_dir, "%s/inc", p->root) >= (int)sizeof p->inc_dir)
        fail_msg("long path");
    p->dirs[0] = p->inc_dir;
    p->defines[0] = (cubec_define){"SCALE", "2.0"};
    p->defines[1] = (cubec_define){"OFFSET", "0.5"};
    p->desc = (cubec_kernel_desc)CUBEC_KERNEL_DESC_INIT;
    p->desc.name = "main";
    p->desc.glsl = main_source;
    p->desc.glsl_path = p->main_path;
    p->desc.include_dirs = p->dirs;
    p->desc.include_dir_count = 1;
    p->desc.defines = p->defines;
    p->desc.define_count = 2;
}

/* Runs the kernel on x = i / 16 - 4 and checks y against `scale` * x + 0.5. */
static void run_and_check(cubec_device *d, cubec_kernel k, float scale)
{
    float x[N], y[N];
    for (int i = 0; i < N; i++)
        x[i] = (float)i / 16.0f - 4.0f;
    cubec_buffer b[2];
    ASSERT_OK(cubec_buffer_from(d, 0, x, sizeof x, &b[0]));
    ASSERT_OK(cubec_buffer_create(d, 0, sizeof y, &b[1]));
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.buffers = b;
    ld.buffer_count = 2;
    ld.groups[0] = N / 64;
    ld.groups[1] = ld.groups[2] = 1;
    ASSERT_OK(cubec_launch(d, 0, &ld));
    ASSERT_OK(cubec_read(d, 0, b[1], 0, y, sizeof y));
    for (int i = 0; i < N; i++)
        assert_float_equal(y[i], x[i] * scale + 0.5f, 1e-5f);
    ASSERT_OK(cubec_buffer_release(d, b[0]));
    ASSERT_OK(cubec_buffer_release(d, b[1]));
}

static uint64_t kernel_hash(cubec_device *d, cubec_kernel k)
{
    cubec_kernel_info info = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k, &info));
    return info.hash;
}

/* Nested includes: one next to the kernel's file, one next to that include, one through the
 * include directory, with the caller's defines used inside them. Also through the compile
 * queue, whose job compiles the files read when it was queued. */
static void test_nested_includes_run(void **state)
{
    (void)state;
    project p;
    test_temp_dir(p.root, sizeof p.root, "cubec_test_glsl_includes");
    make_project(p.root, scale_twice);
    project_desc(&p);
    cubec_device *d = test_device_open();
    cubec_kernel k, q;
    ASSERT_OK(cubec_kernel_create(d, &p.desc, &k));
    run_and_check(d, k, 2.0f);
    p.desc.name = "queued";
    p.desc.optimize = 1;
    ASSERT_OK(cubec_kernel_queue(d, &p.desc, &q));
    ASSERT_OK(cubec_kernel_wait(d, q));
    run_and_check(d, q, 2.0f);
    test_device_close(d);
    test_remove_tree(p.root);
}

/* An edited include gives a new kernel, in memory and on disk: never the stale one. */
static void test_edited_include_recompiles(void **state)
{
    (void)state;
    project p;
    test_temp_dir(p.root, sizeof p.root, "cubec_test_glsl_includes");
    make_project(p.root, scale_twice);
    project_desc(&p);
    char cache[512];
    test_temp_dir(cache, sizeof cache, "cubec_test_glsl_includes_cache");
    setenv("CUBEC_CACHE_DIR", cache, 1);

    cubec_device *d = test_device_open();
    cubec_kernel a, b, c;
    ASSERT_OK(cubec_kernel_create(d, &p.desc, &a));
    run_and_check(d, a, 2.0f);
    ASSERT_OK(cubec_kernel_create(d, &p.desc, &b));
    assert_true(kernel_hash(d, a) == kernel_hash(d, b)); /* unchanged files: the same kernel */
    write_file(p.root, "kernels/lib/scale.glsl", scale_thrice);
    ASSERT_OK(cubec_kernel_create(d, &p.desc, &c));
    assert_true(kernel_hash(d, a) != kernel_hash(d, c));
    run_and_check(d, c, 3.0f);
    test_device_close(d);

    /* A new device reads the disk cache: the SPIR-V of the edited file, then of the first. */
    d = test_device_open();
    ASSERT_OK(cubec_kernel_create(d, &p.desc, &c));
    run_and_check(d, c, 3.0f);
    write_file(p.root, "kernels/lib/scale.glsl", scale_twice);
    ASSERT_OK(cubec_kernel_create(d, &p.desc, &a));
    run_and_check(d, a, 2.0f);
    /* The include directory's file too. */
    write_file(p.root, "inc/types.glsl", "#define N_ELEMS 128u\n");
    ASSERT_OK(cubec_kernel_create(d, &p.desc, &b));
    assert_true(kernel_hash(d, a) != kernel_hash(d, b));
    test_device_close(d);

    setenv("CUBEC_CACHE_DIR", "none", 1);
    test_remove_tree(cache);
    test_remove_tree(p.root);
}

/* An include not found names the file, the including file and its line, and where it looked. */
static void test_missing_include_message(void **state)
{
    (void)state;
    project p;
    test_temp_dir(p.root, sizeof p.root, "cubec_test_glsl_includes");
    make_project(p.root, "#include \"absent.glsl\"\n");
    project_desc(&p);
    cubec_device *d = test_device_open();
    cubec_kernel k;
    cubec_status st = cubec_kernel_create(d, &p.desc, &k);
    assert_non_null(st);
    assert_int_equal(cubec_status_code(st), CUBEC_COMPILE_FAILED);
    const char *msg = cubec_status_message(st);
    char want[4096];
    int n = snprintf(want, sizeof want,
                     "%s/kernels/lib/scale.glsl:1: error: '#include' : not found in "
                     "'%s/kernels/lib' (the including file's directory), '%s/inc'",
                     p.root, p.root, p.root);
    assert_true(n < (int)sizeof want);
    if (!strstr(msg, want) || !strstr(msg, "absent.glsl"))
        fail_msg("message lacks '%s' and the file's name: %s", want, msg);
    cubec_status_free(st);

    /* Without a path or directories, the message says that nothing was searched. */
    cubec_kernel_desc bare = CUBEC_KERNEL_DESC_INIT;
    bare.name = "bare";
    bare.glsl = main_source;
    ASSERT_ERROR(cubec_kernel_create(d, &bare, &k), CUBEC_COMPILE_FAILED,
                 "bare:2: error: '#include' : not found: no directory to search (the kernel has "
                 "no glsl_path and no include_dirs)");
    /* <x> is looked for in the include directories only, not next to the file. */
    write_file(p.root, "kernels/lib/scale.glsl", scale_twice);
    write_file(p.root, "kernels/lib/ops.glsl",
               "#include <scale.glsl>\nfloat apply(float v) { return scaled(v) + OFFSET; }\n");
    ASSERT_ERROR(cubec_kernel_create(d, &p.desc, &k), CUBEC_COMPILE_FAILED,
                 "'#include' : not found in '");
    test_device_close(d);
    test_remove_tree(p.root);
}

/* An include cycle ends with a message naming the chain, at once; guarded files that include
 * each other are fine. */
static void test_include_cycle(void **state)
{
    (void)state;
    project p;
    test_temp_dir(p.root, sizeof p.root, "cubec_test_glsl_includes");
    make_project(p.root, "#include \"a.glsl\"\nfloat scaled(float v) { return v * SCALE; }\n");
    write_file(p.root, "kernels/lib/a.glsl", "#include \"b.glsl\"\n");
    /* Twice: without the stop after the first failure the work would double per level. */
    write_file(p.root, "kernels/lib/b.glsl", "#include \"a.glsl\"\n#include \"a.glsl\"\n");
    project_desc(&p);
    cubec_device *d = test_device_open();
    cubec_kernel k;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cubec_status st = cubec_kernel_create(d, &p.desc, &k);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_non_null(st);
    assert_int_equal(cubec_status_code(st), CUBEC_COMPILE_FAILED);
    char want[4096];
    int n = snprintf(want, sizeof want,
                     "include cycle: %s -> %s/kernels/lib/ops.glsl -> %s/kernels/lib/scale.glsl -> "
                     "%s/kernels/lib/a.glsl -> %s/kernels/lib/b.glsl -> %s/kernels/lib/a.glsl (",
                     p.main_path, p.root, p.root, p.root, p.root, p.root);
    assert_true(n < (int)sizeof want);
    if (!strstr(cubec_status_message(st), want))
        fail_msg("message lacks '%s': %s", want, cubec_status_message(st));
    cubec_status_free(st);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_true(s < 10.0);

    write_file(p.root, "kernels/lib/a.glsl",
               "#ifndef A_GLSL\n#define A_GLSL\n#include "
               "\"b.glsl\"\n#endif\n");
    write_file(p.root, "kernels/lib/b.glsl",
               "#ifndef B_GLSL\n#define B_GLSL\n#include "
               "\"a.glsl\"\n#endif\n");
    ASSERT_OK(cubec_kernel_create(d, &p.desc, &k));
    run_and_check(d, k, 2.0f);
    test_device_close(d);
    test_remove_tree(p.root);
}

/* A kernel that needs an extension its source does not enable (as ncnn's fp16/int8 paths leave
 * to the build): refused without the preamble, runs with it. */
static const char int8_source[] = "#version 450\n"
                                  "layout(local_size_x = 64) in;\n"
                                  "layout(std430, binding = 0) readonly buffer X { int x[]; };\n"
                                  "layout(std430, binding = 1) writeonly buffer Y { int y[]; };\n"
                                  "void main() {\n"
                                  "    uint i = gl_GlobalInvocationID.x;\n"
                                  "    int8_t v = int8_t(x[i]);\n"
                                  "    y[i] = int(v * int8_t(MUL));\n"
                                  "}\n";

static void test_preamble_extension(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_define mul = {"MUL", "3"};
    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    kd.name = "int8";
    kd.glsl = int8_source;
    kd.defines = &mul;
    kd.define_count = 1;
    cubec_kernel k;
    ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_COMPILE_FAILED, "int8:7: error");
    kd.preamble = "#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require";
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    if (!(info.features & CUBEC_FEATURE_INT8)) {
        /* It compiles with the preamble; a device without 8-bit integers (the webgpu backend
         * enables none) then refuses it by the feature, and there is nothing to run. */
        ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_UNSUPPORTED,
                     "needs the device feature int8");
        print_message("the kernel is not run: device '%s' lacks int8\n", info.name);
        test_device_close(d);
        return;
    }
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    int32_t x[N], y[N];
    for (int i = 0; i < N; i++)
        x[i] = i - 128;
    cubec_buffer b[2];
    ASSERT_OK(cubec_buffer_from(d, 0, x, sizeof x, &b[0]));
    ASSERT_OK(cubec_buffer_create(d, 0, sizeof y, &b[1]));
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.buffers = b;
    ld.buffer_count = 2;
    ld.groups[0] = N / 64;
    ld.groups[1] = ld.groups[2] = 1;
    ASSERT_OK(cubec_launch(d, 0, &ld));
    ASSERT_OK(cubec_read(d, 0, b[1], 0, y, sizeof y));
    /* int8 arithmetic wraps: the product is taken modulo 256 as a signed byte. */
    for (int i = 0; i < N; i++)
        assert_int_equal(y[i], (int8_t)(uint8_t)((x[i] * 3) & 0xff));
    ASSERT_OK(cubec_buffer_release(d, b[0]));
    ASSERT_OK(cubec_buffer_release(d, b[1]));
    test_device_close(d);
}

/* The preamble moves no line: an error in the source keeps its line, one in the preamble is
 * reported as the preamble's, with a glsl_path the file's path is the name. */
static void test_preamble_keeps_lines(void **state)
{
    (void)state;
    static const char bad[] = "// a comment line\n"
                              "#version 450\n"
                              "layout(local_size_x = 1) in;\n"
                              "void main() {\n"
                              "    undeclared = 1;\n"
                              "}\n";
    cubec_device *d = test_device_open();
    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    kd.name = "lines";
    kd.glsl = bad;
    cubec_kernel k;
    ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_COMPILE_FAILED,
                 "lines:5: error: 'undeclared'");
    kd.preamble = "#extension GL_EXT_shader_16bit_storage : require\n#define A 1\n#define B 2\n";
    ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_COMPILE_FAILED,
                 "lines:5: error: 'undeclared'");
    kd.glsl_path = "shaders/lines.comp";
    ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_COMPILE_FAILED,
                 "shaders/lines.comp:5: error: 'undeclared'");
    kd.preamble = "#define A 1\nfloat broken = ;\n";
    ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_COMPILE_FAILED, "<preamble>:2: error");
    test_device_close(d);
}

/* A file the preamble includes is part of the key like the source's own includes. */
static void test_preamble_include_in_key(void **state)
{
    (void)state;
    project p;
    test_temp_dir(p.root, sizeof p.root, "cubec_test_glsl_includes");
    make_project(p.root, scale_twice);
    project_desc(&p);
    write_file(p.root, "kernels/pre.glsl", "#define OFFSET 0.5\n");
    p.desc.define_count = 1; /* SCALE only: OFFSET comes from the preamble's include */
    p.desc.preamble = "#include \"pre.glsl\"";
    cubec_device *d = test_device_open();
    cubec_kernel a, b;
    ASSERT_OK(cubec_kernel_create(d, &p.desc, &a));
    run_and_check(d, a, 2.0f);
    write_file(p.root, "kernels/pre.glsl", "#define OFFSET 0.5 + 1.0\n");
    ASSERT_OK(cubec_kernel_create(d, &p.desc, &b));
    assert_true(kernel_hash(d, a) != kernel_hash(d, b));
    test_device_close(d);
    test_remove_tree(p.root);
}

/* Bad arguments are named. */
static void test_bad_arguments(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    kd.glsl = main_source;
    kd.include_dir_count = 2;
    cubec_kernel k;
    ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_INVALID_ARGUMENT,
                 "desc->include_dirs is NULL with include_dir_count 2");
    const char *dirs[2] = {"a", ""};
    kd.include_dirs = dirs;
    ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_INVALID_ARGUMENT,
                 "desc->include_dirs[1] is empty");
    kd.include_dir_count = 0;
    kd.glsl_path = "";
    ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_INVALID_ARGUMENT,
                 "desc->glsl_path is empty");
    static const uint32_t words[5] = {0x07230203u, 0x00010500u, 0, 1, 0};
    cubec_kernel_desc sd = CUBEC_KERNEL_DESC_INIT;
    sd.spirv = words;
    sd.spirv_words = 5;
    sd.preamble = "#define X 1";
    ASSERT_ERROR(cubec_kernel_create(d, &sd, &k), CUBEC_INVALID_ARGUMENT,
                 "desc->preamble is set for a SPIR-V kernel");
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nested_includes_run),
        cmocka_unit_test(test_edited_include_recompiles),
        cmocka_unit_test(test_missing_include_message),
        cmocka_unit_test(test_include_cycle),
        cmocka_unit_test(test_preamble_extension),
        cmocka_unit_test(test_preamble_keeps_lines),
        cmocka_unit_test(test_preamble_include_in_key),
        cmocka_unit_test(test_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
