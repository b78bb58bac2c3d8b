/* info_by_name: filling a kernel's metadata block by member name, without a C struct.
 *
 * A kernel's CUBEC_INFO block follows GLSL's std430 layout, where a vec3 starts at a multiple of
 * 16 bytes and the block ends at its last member (no tail padding). A C struct mirroring it must
 * get every offset right by hand. cubec reflects the block instead: cubec_kernel_info_field lists
 * each member's name, offset, size and type, and cubec_kernel_info_field_find looks one up by
 * name. This program:
 *   1. opens the default device in the bounds-checked mode (cubec_device_desc.robust), which a
 *      program under development should use: a store past a buffer's end is dropped,
 *   2. compiles a kernel whose block mixes a uint, a vec3 and a float,
 *   3. prints the block's layout as reflected,
 *   4. fills the block by name, launches, and checks the result against the CPU.
 * docs/kernels.md ("Filling the block by name") has the table of cubec_info_field's fields. */
#include <cubec/cubec.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* y[i] = x[i] * scale + shift[i % 3]: `shift` is a vec3 at offset 16, not 4, and `scale` packs
 * into the 4 bytes after it (offset 28); the block is 32 bytes. */
static const char KERNEL_GLSL[] =
    "#version 450\n"
    "layout(local_size_x = 64) in;\n"
    "layout(set = 0, binding = 0) readonly buffer X { float x[]; };\n"
    "layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };\n"
    "CUBEC_INFO(uint n; vec3 shift; float scale;)\n"
    "void main()\n"
    "{\n"
    "    uint i = gl_GlobalInvocationID.x;\n"
    "    if (i < info.n) y[i] = x[i] * info.scale + info.shift[i % 3u];\n"
    "}\n";

#define N 1000u

static const char *type_name(cubec_info_type t)
{
    switch (t) {
    case CUBEC_INFO_UINT32: return "uint";
    case CUBEC_INFO_INT32: return "int";
    case CUBEC_INFO_FLOAT32: return "float";
    case CUBEC_INFO_FLOAT64: return "double";
    default: return "other";
    }
}

/* Copies `size` bytes of `value` to the member `name` of `block`. A name the kernel does not have
 * stops the program with cubec's message, which lists the names it does have. */
static void set_member(cubec_device *device, cubec_kernel kernel, unsigned char *block,
                       const char *name, const void *value, size_t size)
{
    cubec_info_field field = CUBEC_INFO_FIELD_INIT;
    CUBEC_CHECK(cubec_kernel_find_info_field(device, kernel, name, &field));
    if (size > field.size) {
        fprintf(stderr, "info_by_name: %zu bytes for '%s', which holds %u\n", size, name,
                field.size);
        exit(EXIT_FAILURE);
    }
    memcpy(block + field.offset, value, size);
}

int main(void)
{
    /* Step 1: bounds checks on. cubec_device_info.robust says what the device gives. */
    cubec_device *device = NULL;
    CUBEC_CHECK(cubec_device_open(
        &(cubec_device_desc){.struct_size = sizeof(cubec_device_desc), .robust = 1}, &device));
    cubec_device_info device_info = CUBEC_DEVICE_INFO_INIT;
    CUBEC_CHECK(cubec_device_get_info(device, &device_info));
    printf("device: %s, bounds checks %s\n", device_info.name,
           device_info.robust == CUBEC_ROBUST_BUFFER ? "per buffer"
           : device_info.robust                      ? "per pool page"
                                                     : "not available");

    /* Step 2: the kernel. */
    cubec_kernel kernel = {0};
    CUBEC_CHECK(cubec_kernel_create(device,
                                    &(cubec_kernel_desc){.struct_size = sizeof(cubec_kernel_desc),
                                                         .name = "shift_scale",
                                                         .glsl = KERNEL_GLSL},
                                    &kernel));

    /* Step 3: the block as reflected. */
    cubec_kernel_info info = CUBEC_KERNEL_INFO_INIT;
    CUBEC_CHECK(cubec_kernel_get_info(device, kernel, &info));
    printf("metadata block: %u bytes, %u members\n", info.info_size, info.info_field_count);
    for (uint32_t i = 0; i < info.info_field_count; i++) {
        cubec_info_field f = CUBEC_INFO_FIELD_INIT;
        CUBEC_CHECK(cubec_kernel_get_info_field(device, kernel, i, &f));
        printf("  %-6s at %2u, %2u bytes, %s x %u\n", f.name, f.offset, f.size, type_name(f.type),
               f.vector_size);
    }

    /* Step 4: fill it by name, launch, check. */
    unsigned char *block = calloc(1, info.info_size);
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    if (!block || !x || !y) {
        fprintf(stderr, "info_by_name: out of host memory\n");
        return EXIT_FAILURE;
    }
    const uint32_t n = N;
    const float shift[3] = {1.0f, -2.0f, 0.5f}, scale = 3.0f;
    set_member(device, kernel, block, "n", &n, sizeof n);
    set_member(device, kernel, block, "shift", shift, sizeof shift);
    set_member(device, kernel, block, "scale", &scale, sizeof scale);
    for (uint32_t i = 0; i < N; i++)
        x[i] = (float)i * 0.25f;

    cubec_buffer bufs[2];
    CUBEC_CHECK(cubec_buffer_from(device, CUBEC_STREAM_CURRENT, x, N * sizeof *x, &bufs[0]));
    CUBEC_CHECK(cubec_buffer_create(device, CUBEC_STREAM_CURRENT, N * sizeof *y, &bufs[1]));
    CUBEC_CHECK(cubec_launch(device, CUBEC_STREAM_CURRENT,
                             &(cubec_launch_desc){.struct_size = sizeof(cubec_launch_desc),
                                                  .kernel = kernel,
                                                  .buffers = bufs,
                                                  .buffer_count = 2,
                                                  .info = block,
                                                  .info_size = info.info_size,
                                                  .groups = {(N + 63) / 64, 1, 1}}));
    CUBEC_CHECK(cubec_read(device, CUBEC_STREAM_CURRENT, bufs[1], 0, y, N * sizeof *y));

    /* x[i] * 3 + a multiple of 0.5 is exact in float: the results must match exactly. */
    uint32_t wrong = 0;
    for (uint32_t i = 0; i < N; i++)
        if (y[i] != x[i] * scale + shift[i % 3]) wrong++;
    printf("%u of %u results match the CPU exactly\n", N - wrong, N);

    CUBEC_CHECK(cubec_buffer_release(device, bufs[0]));
    CUBEC_CHECK(cubec_buffer_release(device, bufs[1]));
    CUBEC_CHECK(cubec_kernel_destroy(device, kernel));
    cubec_device_close(device);
    free(block);
    free(x);
    free(y);
    return wrong ? EXIT_FAILURE : EXIT_SUCCESS;
}
