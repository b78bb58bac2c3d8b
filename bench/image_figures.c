/* image.write / image.read: GB/s between pageable host memory and an image (cubec_image_write +
 * sync, cubec_image_read), a cubec-only pair of rows (raw Vulkan has no side here): the baseline
 * is cubec_write + sync / cubec_read of the same bytes into a buffer, so the ratio is what the
 * image path costs over a buffer's (its staging buffer and its copy to or from the texture).
 *
 * The image is rgba8 (every backend stores it) and its width is odd, 2047 texels (1023 with
 * --quick, 4095 on a GPU): rows of 8188 bytes, not a multiple of 256, so on the webgpu backend a
 * copy cannot take the packed rows as they are (WebGPU's bytesPerRow is a multiple of 256) and
 * the backend's repacking is what the row measures. 16 MiB on CPU devices, 4 MiB with --quick,
 * 64 MiB on a GPU (as write.h2d). Every byte is checked after the last repetition. */
#include "bench_figure.h"

#include <cubec/cubec.h>

#include <stdlib.h>
#include <string.h>

#define CU_TRY(call) BENCH_TRY(bench_from_status((call), #call))
#define STREAM CUBEC_STREAM_CURRENT
#define IMAGE_SEED 0x1a6eu

typedef struct image_fig {
    cubec_device *dev;
    cubec_image image;   /* the image sides */
    cubec_buffer buffer; /* the baselines: a buffer of the same bytes */
    uint32_t width, height;
    uint64_t bytes;
    uint32_t *host;
} image_fig;

static void image_teardown(void *state)
{
    image_fig *f = state;
    if (!f) return;
    cubec_status_free(cubec_sync(f->dev, STREAM));
    bench_err err = bench_from_status(cubec_image_release(f->dev, f->image), "cubec_image_release");
    if (!err)
        err = bench_from_status(cubec_buffer_release(f->dev, f->buffer), "cubec_buffer_release");
    bench_err_free(err);
    bench_host_free(f->host);
    free(f);
}

/* The host bytes (the pattern) and the image or the buffer holding them already. */
static bench_err image_setup_as(void *dev, const bench_params *params, void **out_state, int image)
{
    image_fig *f = calloc(1, sizeof *f);
    if (!f) return bench_errorf("out of host memory");
    *out_state = f;
    f->dev = dev;
    f->width = params->gpu ? 4095u : params->quick ? 1023u : 2047u;
    f->height = f->width + 1u;
    f->bytes = (uint64_t)f->width * f->height * 4u;
    f->host = bench_host_alloc(f->bytes);
    if (!f->host) return bench_errorf("out of host memory");
    bench_content_fill(BENCH_CONTENT_PATTERN, IMAGE_SEED, 0, f->host, f->bytes / 4);
    if (image) {
        cubec_image_desc d = CUBEC_IMAGE_DESC_INIT;
        d.format = CUBEC_IMAGE_FORMAT_RGBA8_UNORM;
        d.width = f->width;
        d.height = f->height;
        CU_TRY(cubec_image_create(f->dev, STREAM, &d, &f->image));
        CU_TRY(cubec_image_write(f->dev, STREAM, f->image, f->host, f->bytes));
    } else {
        CU_TRY(cubec_buffer_create(f->dev, STREAM, f->bytes, &f->buffer));
        CU_TRY(cubec_write(f->dev, STREAM, f->buffer, 0, f->host, f->bytes));
    }
    CU_TRY(cubec_sync(f->dev, STREAM));
    return NULL;
}

static bench_err image_setup(void *dev, const bench_params *params, void **out_state)
{
    return image_setup_as(dev, params, out_state, 1);
}

static bench_err buffer_setup(void *dev, const bench_params *params, void **out_state)
{
    return image_setup_as(dev, params, out_state, 0);
}

/* To the end of the sync: a write may return before its bytes are in place. */
static bench_err image_write_run(void *state, bench_sample *out)
{
    image_fig *f = state;
    double t0 = bench_now();
    if (f->image.id)
        CU_TRY(cubec_image_write(f->dev, STREAM, f->image, f->host, f->bytes));
    else
        CU_TRY(cubec_write(f->dev, STREAM, f->buffer, 0, f->host, f->bytes));
    CU_TRY(cubec_sync(f->dev, STREAM));
    out->value = (double)f->bytes / (bench_now() - t0) * 1e-9;
    return NULL;
}

static bench_err image_read_run(void *state, bench_sample *out)
{
    image_fig *f = state;
    memset(f->host, 0, f->bytes); /* so that the check proves the last read wrote every byte */
    double t0 = bench_now();
    if (f->image.id)
        CU_TRY(cubec_image_read(f->dev, STREAM, f->image, f->host, f->bytes));
    else
        CU_TRY(cubec_read(f->dev, STREAM, f->buffer, 0, f->host, f->bytes));
    out->value = (double)f->bytes / (bench_now() - t0) * 1e-9;
    return NULL;
}

/* The writes: the bytes read back are the pattern. */
static bench_err image_write_verify(void *state)
{
    image_fig *f = state;
    memset(f->host, 0, f->bytes);
    if (f->image.id)
        CU_TRY(cubec_image_read(f->dev, STREAM, f->image, f->host, f->bytes));
    else
        CU_TRY(cubec_read(f->dev, STREAM, f->buffer, 0, f->host, f->bytes));
    return bench_content_check(BENCH_CONTENT_PATTERN, IMAGE_SEED, 0, f->host, f->bytes / 4);
}

/* The reads: the last one brought the pattern back. */
static bench_err image_read_verify(void *state)
{
    image_fig *f = state;
    return bench_content_check(BENCH_CONTENT_PATTERN, IMAGE_SEED, 0, f->host, f->bytes / 4);
}

const bench_impl bench_image_write_impl = {image_setup, image_write_run, image_write_verify,
                                           image_teardown};
const bench_impl bench_image_read_impl = {image_setup, image_read_run, image_read_verify,
                                          image_teardown};
const bench_impl bench_image_write_baseline_impl = {buffer_setup, image_write_run,
                                                    image_write_verify, image_teardown};
const bench_impl bench_image_read_baseline_impl = {buffer_setup, image_read_run, image_read_verify,
                                                   image_teardown};
