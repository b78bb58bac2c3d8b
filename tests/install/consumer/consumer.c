/* A program built against the installed cubec: doubles a few numbers on the default device and
 * checks them against the same computation on the CPU. */
#include <cubec/cubec.h>

#include <stdio.h>

static const char src[] = "#version 450\n"
                          "layout(local_size_x = 8) in;\n"
                          "layout(std430, binding = 0) buffer B { float v[]; };\n"
                          "void main() { v[gl_GlobalInvocationID.x] *= 2.0; }\n";

int main(void)
{
    cubec_device *d;
    cubec_status st = cubec_device_open(NULL, &d);
    if (st) {
        fprintf(stderr, "open: %s\n", cubec_status_message(st));
        return 1;
    }
    float v[8], ref[8];
    for (int i = 0; i < 8; i++)
        v[i] = ref[i] = (float)i * 1.5f;
    cubec_buffer b;
    cubec_kernel k;
    cubec_kernel_desc kd = {.struct_size = sizeof(cubec_kernel_desc), .glsl = src};
    st = cubec_buffer_from(d, CUBEC_STREAM_CURRENT, v, sizeof v, &b);
    if (!st) st = cubec_kernel_create(d, &kd, &k);
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = k,
                            .buffers = &b,
                            .buffer_count = 1,
                            .groups = {1, 1, 1}};
    if (!st) st = cubec_launch(d, CUBEC_STREAM_CURRENT, &ld);
    if (!st) st = cubec_read(d, CUBEC_STREAM_CURRENT, b, 0, v, sizeof v);
    int bad = st != NULL;
    if (st) fprintf(stderr, "error: %s\n", cubec_status_message(st));
    for (int i = 0; i < 8 && !bad; i++)
        bad = v[i] != ref[i] * 2.0f;
    cubec_status_free(st);
    cubec_device_close(d);
    printf("consumer: %s\n", bad ? "WRONG" : "ok");
    return bad;
}
