/* The metadata block's members by name (cubec_kernel_get_info_field, docs/kernels.md "Filling the
 * block by name"): the reflected offsets, sizes and shapes of CUBEC_INFO's members against the
 * offsets a C compiler gives a struct that mirrors the block (offsetof), in every metadata form; a
 * block filled by name alone read back by the kernel; the C struct's padded size accepted at
 * launch (a double + float block is 12 bytes, its struct 16); and the refusals, whose messages
 * name the members and their offsets. */
#include "test_util.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* std430 layout of A_BLOCK, mirrored in C: vec3 aligns to 16, a mat2's columns and a struct
 * holding a vec2 to 8. */
typedef struct inner_c {
    float a;
    _Alignas(8) float b[2];
} inner_c;

typedef struct block_a {
    uint32_t n;
    _Alignas(16) float v[3];
    float s;
    float off[2];
    uint32_t lanes[3];
    _Alignas(8) float m[2][2];
    inner_c inner;
} block_a;

#define A_WORDS 17u

static const char a_src[] =
    "#version 450\n"
    "layout(local_size_x = 1) in;\n"
    "struct Inner { float a; vec2 b; };\n"
    "CUBEC_INFO(uint n; vec3 v; float s; vec2 off; uint lanes[3]; mat2 m; Inner inner;)\n"
    "layout(set = 0, binding = 0) writeonly buffer Out { uint o[]; };\n"
    "void main() {\n"
    "  o[0] = info.n;\n"
    "  o[1] = floatBitsToUint(info.v.x); o[2] = floatBitsToUint(info.v.y);\n"
    "  o[3] = floatBitsToUint(info.v.z); o[4] = floatBitsToUint(info.s);\n"
    "  o[5] = floatBitsToUint(info.off.x); o[6] = floatBitsToUint(info.off.y);\n"
    "  o[7] = info.lanes[0]; o[8] = info.lanes[1]; o[9] = info.lanes[2];\n"
    "  o[10] = floatBitsToUint(info.m[0][0]); o[11] = floatBitsToUint(info.m[0][1]);\n"
    "  o[12] = floatBitsToUint(info.m[1][0]); o[13] = floatBitsToUint(info.m[1][1]);\n"
    "  o[14] = floatBitsToUint(info.inner.a);\n"
    "  o[15] = floatBitsToUint(info.inner.b.x); o[16] = floatBitsToUint(info.inner.b.y);\n"
    "}\n";

typedef struct want_field {
    const char *name;
    size_t offset, size;
    cubec_info_type type;
    uint32_t vector_size, columns, array_length, array_stride, matrix_stride;
} want_field;

/* What the C compiler says the block's members are. */
static const want_field a_want[] = {
    {"n", offsetof(block_a, n), 4, CUBEC_INFO_UINT32, 1, 1, 0, 0, 0},
    {"v", offsetof(block_a, v), sizeof(float[3]), CUBEC_INFO_FLOAT32, 3, 1, 0, 0, 0},
    {"s", offsetof(block_a, s), 4, CUBEC_INFO_FLOAT32, 1, 1, 0, 0, 0},
    {"off", offsetof(block_a, off), 8, CUBEC_INFO_FLOAT32, 2, 1, 0, 0, 0},
    {"lanes", offsetof(block_a, lanes), sizeof(uint32_t[3]), CUBEC_INFO_UINT32, 1, 1, 3, 4, 0},
    {"m", offsetof(block_a, m), sizeof(float[2][2]), CUBEC_INFO_FLOAT32, 2, 2, 0, 0, 8},
    {"inner.a", offsetof(block_a, inner) + offsetof(inner_c, a), 4, CUBEC_INFO_FLOAT32, 1, 1, 0, 0,
     0},
    {"inner.b", offsetof(block_a, inner) + offsetof(inner_c, b), 8, CUBEC_INFO_FLOAT32, 2, 1, 0, 0,
     0},
};
#define A_FIELDS (sizeof a_want / sizeof a_want[0])

static cubec_kernel make(cubec_device *d, const char *name, const char *src)
{
    cubec_kernel k;
    ASSERT_OK(cubec_kernel_create(
        d,
        &(cubec_kernel_desc){.struct_size = sizeof(cubec_kernel_desc), .name = name, .glsl = src},
        &k));
    return k;
}

static void expect_field(const cubec_info_field *f, const want_field *w)
{
    if (!f->name || strcmp(f->name, w->name) != 0)
        fail_msg("field named '%s', want '%s'", f->name ? f->name : "(null)", w->name);
    if (f->offset != w->offset || f->size != w->size)
        fail_msg("field '%s' at %u size %u, want at %zu (offsetof) size %zu", w->name, f->offset,
                 f->size, w->offset, w->size);
    if (f->type != w->type || f->vector_size != w->vector_size || f->columns != w->columns ||
        f->array_length != w->array_length || f->array_stride != w->array_stride ||
        f->matrix_stride != w->matrix_stride)
        fail_msg("field '%s': type %d vector %u columns %u array %u x %u matrix stride %u; want "
                 "type %d vector %u columns %u array %u x %u matrix stride %u",
                 w->name, (int)f->type, f->vector_size, f->columns, f->array_length,
                 f->array_stride, f->matrix_stride, (int)w->type, w->vector_size, w->columns,
                 w->array_length, w->array_stride, w->matrix_stride);
}

/* Writes `size` bytes of `value` at the field `name`'s offset, as a program filling the block by
 * name does (docs/kernels.md). */
static void set_field(cubec_device *d, cubec_kernel k, unsigned char *block, const char *name,
                      const void *value, size_t size)
{
    cubec_info_field f = CUBEC_INFO_FIELD_INIT;
    ASSERT_OK(cubec_kernel_find_info_field(d, k, name, &f));
    assert_true(size <= f.size);
    memcpy(block + f.offset, value, size);
}

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* One form of the block (push constants, storage or uniform buffer): the fields against
 * offsetof, then a block filled by name alone and read back by the kernel. */
static void check_form(const char *form)
{
    setenv("CUBEC_KERNEL_METADATA", form, 1);
    cubec_device *d = test_device_open();
    unsetenv("CUBEC_KERNEL_METADATA");
    cubec_kernel k = make(d, "fields", a_src);
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k, &ki));
    if (ki.info_field_count != A_FIELDS)
        fail_msg("%s: %u fields, want %zu", form, ki.info_field_count, A_FIELDS);
    for (uint32_t i = 0; i < A_FIELDS; i++) {
        cubec_info_field f = CUBEC_INFO_FIELD_INIT;
        ASSERT_OK(cubec_kernel_get_info_field(d, k, i, &f));
        expect_field(&f, &a_want[i]);
        cubec_info_field by_name = CUBEC_INFO_FIELD_INIT;
        ASSERT_OK(cubec_kernel_find_info_field(d, k, a_want[i].name, &by_name));
        assert_int_equal(by_name.offset, f.offset);
    }
    /* The block ends at the last member: 88 bytes, where the C struct (aligned to 16 by its vec3)
     * is 96. */
    assert_int_equal(ki.info_size, offsetof(block_a, inner) + sizeof(inner_c));

    unsigned char *block = calloc(1, ki.info_size);
    assert_non_null(block);
    const uint32_t n = 77, lanes[3] = {5, 6, 7};
    const float v[3] = {1.5f, -2.25f, 3.0f}, s = 4.5f, off[2] = {0.125f, -8.0f};
    const float m[4] = {10.0f, 11.0f, 12.0f, 13.0f}, a = 0.75f, b[2] = {-1.0f, 2.5f};
    set_field(d, k, block, "n", &n, sizeof n);
    set_field(d, k, block, "v", v, sizeof v);
    set_field(d, k, block, "s", &s, sizeof s);
    set_field(d, k, block, "off", off, sizeof off);
    set_field(d, k, block, "lanes", lanes, sizeof lanes);
    cubec_info_field mf = CUBEC_INFO_FIELD_INIT;
    ASSERT_OK(cubec_kernel_find_info_field(d, k, "m", &mf));
    for (uint32_t c = 0; c < 2; c++) /* column by column, at the matrix stride */
        memcpy(block + mf.offset + c * mf.matrix_stride, &m[2 * c], 2 * sizeof(float));
    set_field(d, k, block, "inner.a", &a, sizeof a);
    set_field(d, k, block, "inner.b", b, sizeof b);

    cubec_buffer out;
    ASSERT_OK(cubec_buffer_create(d, CUBEC_STREAM_CURRENT, A_WORDS * 4, &out));
    ASSERT_OK(cubec_launch(d, CUBEC_STREAM_CURRENT,
                           &(cubec_launch_desc){.struct_size = sizeof(cubec_launch_desc),
                                                .kernel = k,
                                                .buffers = &out,
                                                .buffer_count = 1,
                                                .info = block,
                                                .info_size = ki.info_size,
                                                .groups = {1, 1, 1}}));
    uint32_t got[A_WORDS];
    ASSERT_OK(cubec_read(d, CUBEC_STREAM_CURRENT, out, 0, got, sizeof got));
    const uint32_t want[A_WORDS] = {
        n,        bits(v[0]), bits(v[1]), bits(v[2]), bits(s),    bits(off[0]), bits(off[1]),
        lanes[0], lanes[1],   lanes[2],   bits(m[0]), bits(m[1]), bits(m[2]),   bits(m[3]),
        bits(a),  bits(b[0]), bits(b[1])};
    for (uint32_t i = 0; i < A_WORDS; i++)
        if (got[i] != want[i])
            fail_msg("%s: word %u is 0x%08x, want 0x%08x", form, i, got[i], want[i]);
    free(block);
    ASSERT_OK(cubec_buffer_release(d, out));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

static void test_fields_push(void **state)
{
    (void)state;
    check_form("push");
}

static void test_fields_buffer(void **state)
{
    (void)state;
    check_form("buffer");
}

static void test_fields_uniform(void **state)
{
    (void)state;
    check_form("uniform");
}

typedef struct double_float {
    double d;
    float f;
} double_float;

/* The double goes out as a double, not through unpackDouble2x32: naga (the WebGPU backend's
 * translator) has no GLSL.std.450 UnpackDouble2x32 ("unsupported extension instantiation"), and
 * the case is about the block's layout, which float64 devices on either backend run. */
static const char df_src[] = "#version 450\n"
                             "layout(local_size_x = 1) in;\n"
                             "CUBEC_INFO(double d; float f;)\n"
                             "layout(set = 0, binding = 0) writeonly buffer Out { double od; "
                             "float of; };\n"
                             "void main() { od = info.d * 2.0; of = info.f; }\n";

/* D2 of the newcomer trial: the block is 12 bytes, its C struct 16; the launch takes either and
 * passes the block's bytes. */
static void test_double_float_padded_struct(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    if (!(info.features & CUBEC_FEATURE_FLOAT64)) {
        test_device_close(d);
        skip();
    }
    cubec_kernel k = make(d, "df", df_src);
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k, &ki));
    assert_int_equal(ki.info_size, offsetof(double_float, f) + sizeof(float));
    assert_int_equal(sizeof(double_float), 16);
    assert_int_equal(ki.info_field_count, 2);
    cubec_info_field f = CUBEC_INFO_FIELD_INIT;
    ASSERT_OK(cubec_kernel_get_info_field(d, k, 0, &f));
    expect_field(&f, &(want_field){"d", offsetof(double_float, d), 8, CUBEC_INFO_FLOAT64, 1, 1});
    ASSERT_OK(cubec_kernel_get_info_field(d, k, 1, &f));
    expect_field(&f, &(want_field){"f", offsetof(double_float, f), 4, CUBEC_INFO_FLOAT32, 1, 1});

    cubec_buffer out;
    /* 16: the Out block rounded up to its double's alignment, the least WebGPU binds it with. */
    ASSERT_OK(cubec_buffer_create(d, CUBEC_STREAM_CURRENT, 16, &out));
    const uint32_t sizes[2] = {12, sizeof(double_float)};
    for (int i = 0; i < 2; i++) {
        double_float block = {.d = 1.25 + i, .f = -3.5f - (float)i};
        ASSERT_OK(cubec_launch(d, CUBEC_STREAM_CURRENT,
                               &(cubec_launch_desc){.struct_size = sizeof(cubec_launch_desc),
                                                    .kernel = k,
                                                    .buffers = &out,
                                                    .buffer_count = 1,
                                                    .info = &block,
                                                    .info_size = sizes[i],
                                                    .groups = {1, 1, 1}}));
        uint32_t got[3];
        ASSERT_OK(cubec_read(d, CUBEC_STREAM_CURRENT, out, 0, got, sizeof got));
        double twice = block.d * 2.0, back;
        uint64_t w = (uint64_t)got[1] << 32 | got[0];
        memcpy(&back, &w, 8);
        if (back != twice || got[2] != bits(block.f))
            fail_msg("info_size %u: d * 2 = %g, f bits 0x%08x; want %g, 0x%08x", sizes[i], back,
                     got[2], twice, bits(block.f));
    }
    /* Neither the block's size nor the struct's: refused, naming the members. */
    unsigned char big[20] = {0};
    ASSERT_ERROR(cubec_launch(d, CUBEC_STREAM_CURRENT,
                              &(cubec_launch_desc){.struct_size = sizeof(cubec_launch_desc),
                                                   .kernel = k,
                                                   .buffers = &out,
                                                   .buffer_count = 1,
                                                   .info = big,
                                                   .info_size = 20,
                                                   .groups = {1, 1, 1}}),
                 CUBEC_INVALID_ARGUMENT,
                 "desc->info_size is 20 but kernel 'df' declares 12 bytes of metadata (or 16, "
                 "padded as in C): d at 0 (double), f at 8 (float)");
    ASSERT_OK(cubec_buffer_release(d, out));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

/* A packed C struct for a block with a vec3: the message says where each member is. */
static void test_vec3_mismatch_names_offsets(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_kernel k = make(d, "v3",
                          "#version 450\n"
                          "layout(local_size_x = 1) in;\n"
                          "CUBEC_INFO(uint n; vec3 v; float s;)\n"
                          "layout(set = 0, binding = 0) writeonly buffer Out { float o[]; };\n"
                          "void main() { o[0] = info.v.x * info.s + float(info.n); }\n");
    struct {
        uint32_t n;
        float v[3];
        float s;
    } packed = {1, {2, 3, 4}, 5};
    cubec_buffer out;
    ASSERT_OK(cubec_buffer_create(d, CUBEC_STREAM_CURRENT, 4, &out));
    ASSERT_ERROR(cubec_launch(d, CUBEC_STREAM_CURRENT,
                              &(cubec_launch_desc){.struct_size = sizeof(cubec_launch_desc),
                                                   .kernel = k,
                                                   .buffers = &out,
                                                   .buffer_count = 1,
                                                   .info = &packed,
                                                   .info_size = sizeof packed,
                                                   .groups = {1, 1, 1}}),
                 CUBEC_INVALID_ARGUMENT,
                 "desc->info_size is 20 but kernel 'v3' declares 32 bytes of metadata: n at 0 "
                 "(uint), v at 16 (vec3), s at 28 (float)");
    ASSERT_OK(cubec_buffer_release(d, out));
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

typedef struct addr_block {
    uint64_t src;
    uint32_t n;
    uint64_t big;
    uint32_t tail;
} addr_block;

/* A buffer_reference member is a device address, and 64-bit members pad the C struct too. */
static void test_address_and_uint64(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    if (!(info.features & CUBEC_FEATURE_BUFFER_DEVICE_ADDRESS) ||
        !(info.features & CUBEC_FEATURE_INT64)) {
        test_device_close(d);
        skip();
    }
    cubec_kernel k =
        make(d, "bda",
             "#version 450\n"
             "#extension GL_EXT_buffer_reference : require\n"
             "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n"
             "layout(local_size_x = 1) in;\n"
             "layout(buffer_reference, std430) readonly buffer Src { uint v[]; };\n"
             "CUBEC_INFO(Src src; uint n; uint64_t big; uint tail;)\n"
             "layout(set = 0, binding = 0) writeonly buffer Out { uint o[]; };\n"
             "void main() { o[0] = info.src.v[0] + info.n + uint(info.big) + info.tail; }\n");
    const want_field want[] = {
        {"src", offsetof(addr_block, src), 8, CUBEC_INFO_ADDRESS, 1, 1},
        {"n", offsetof(addr_block, n), 4, CUBEC_INFO_UINT32, 1, 1},
        {"big", offsetof(addr_block, big), 8, CUBEC_INFO_UINT64, 1, 1},
        {"tail", offsetof(addr_block, tail), 4, CUBEC_INFO_UINT32, 1, 1},
    };
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, k, &ki));
    assert_int_equal(ki.info_field_count, 4);
    assert_int_equal(ki.info_size, offsetof(addr_block, tail) + 4);
    for (uint32_t i = 0; i < 4; i++) {
        cubec_info_field f = CUBEC_INFO_FIELD_INIT;
        ASSERT_OK(cubec_kernel_get_info_field(d, k, i, &f));
        expect_field(&f, &want[i]);
    }
    ASSERT_OK(cubec_kernel_destroy(d, k));
    test_device_close(d);
}

static void test_refusals(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_kernel k = make(d, "two",
                          "#version 450\n"
                          "layout(local_size_x = 1) in;\n"
                          "CUBEC_INFO(uint n; float scale;)\n"
                          "layout(set = 0, binding = 0) buffer B { float x[]; };\n"
                          "void main() { x[0] = float(info.n) * info.scale; }\n");
    cubec_kernel none = make(d, "none",
                             "#version 450\n"
                             "layout(local_size_x = 1) in;\n"
                             "layout(set = 0, binding = 0) buffer B { float x[]; };\n"
                             "void main() { x[0] = 1.0; }\n");
    cubec_info_field f = CUBEC_INFO_FIELD_INIT;
    ASSERT_ERROR(
        cubec_kernel_get_info_field(d, k, 2, &f), CUBEC_INVALID_ARGUMENT,
        "cubec_kernel_get_info_field: index 2 is past the 2 metadata fields of kernel 'two'");
    ASSERT_ERROR(cubec_kernel_find_info_field(d, k, "scal", &f), CUBEC_INVALID_ARGUMENT,
                 "kernel 'two' has no metadata field 'scal' (its fields: n at 0 (uint), scale at "
                 "4 (float))");
    ASSERT_ERROR(cubec_kernel_find_info_field(d, k, NULL, &f), CUBEC_INVALID_ARGUMENT,
                 "name is NULL");
    ASSERT_ERROR(cubec_kernel_get_info_field(d, k, 0, NULL), CUBEC_INVALID_ARGUMENT,
                 "out_field is NULL");
    ASSERT_ERROR(cubec_kernel_get_info_field(d, (cubec_kernel){12345}, 0, &f),
                 CUBEC_INVALID_ARGUMENT, "cubec_kernel_get_info_field: kernel");
    cubec_kernel_info ki = CUBEC_KERNEL_INFO_INIT;
    ASSERT_OK(cubec_kernel_get_info(d, none, &ki));
    assert_int_equal(ki.info_field_count, 0);
    ASSERT_ERROR(cubec_kernel_get_info_field(d, none, 0, &f), CUBEC_INVALID_ARGUMENT,
                 "index 0 is past the 0 metadata fields of kernel 'none'");
    ASSERT_ERROR(cubec_kernel_find_info_field(d, none, "n", &f), CUBEC_INVALID_ARGUMENT,
                 "has no metadata field 'n' (its fields: no members)");
    ASSERT_OK(cubec_kernel_destroy(d, k));
    ASSERT_OK(cubec_kernel_destroy(d, none));
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields_push),
        cmocka_unit_test(test_fields_buffer),
        cmocka_unit_test(test_fields_uniform),
        cmocka_unit_test(test_double_float_padded_struct),
        cmocka_unit_test(test_vec3_mismatch_names_offsets),
        cmocka_unit_test(test_address_and_uint64),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
