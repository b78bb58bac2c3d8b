/* multi.cuda_roundtrip: one round trip through CUDA on the GPU cubec runs on. A cubec kernel
 * writes 1 MiB of an exportable buffer, a CUDA kernel (PTX, JIT-compiled by the driver at setup)
 * reads and rewrites it in place through cubec_cuda_map's pointer, and cubec reads it (a
 * cubec_copy into a second buffer), to a cubec_sync: the wall time of the three, in us. The
 * baseline runs the same three kernels in cubec alone on one stream (the CUDA kernel's twin in
 * GLSL), so the difference is what the two handoffs cost: cubec -> CUDA through
 * cubec_cuda_wait_stream (CUDA's stream waits on cubec's exported timeline) and CUDA -> cubec
 * through cubec_stream_wait_cuda (cubec's next batch waits on a timeline CUDA signals). Both are
 * GPU-side waits: the host queues all three without waiting and waits once, at the end, as the
 * baseline does.
 *
 * Present only where libcuda loads and the device is an NVIDIA GPU that exports its timeline;
 * skipped elsewhere, saying which (bench_cuda_roundtrip_unavailable). The CUDA driver comes
 * through interop/cuda_driver.h, as cubec's own interop loads it: no build dependency on CUDA. */
#include "bench_figure.h"
#include "interop/cuda_driver.h"

#include <cubec/cubec.h>

#include <stdlib.h>

#define CU_TRY(call) BENCH_TRY(bench_from_status((call), #call))

enum { WORDS = (1u << 20) / 4, GROUP = 256 };
#define BYTES ((uint64_t)WORDS * 4)

/* a[i] = i * 7 + seed: the seed changes every repetition, so a stale value is caught. */
static const char write_src[] = "#version 450\n"
                                "layout(local_size_x = 256) in;\n"
                                "layout(std430, binding = 0) writeonly buffer A { uint a[]; };\n"
                                "CUBEC_INFO(uint n; uint seed;)\n"
                                "void main() {\n"
                                "  uint i = gl_GlobalInvocationID.x;\n"
                                "  if (i < info.n) a[i] = i * 7u + info.seed;\n"
                                "}\n";

/* The baseline's twin of the CUDA kernel: a[i] = a[i] * 2 + 1. */
static const char twice_src[] = "#version 450\n"
                                "layout(local_size_x = 256) in;\n"
                                "layout(std430, binding = 0) buffer A { uint a[]; };\n"
                                "CUBEC_INFO(uint n; uint seed;)\n"
                                "void main() {\n"
                                "  uint i = gl_GlobalInvocationID.x;\n"
                                "  if (i < info.n) a[i] = a[i] * 2u + 1u;\n"
                                "}\n";

/* twice_in_place(a, n): a[i] = a[i] * 2 + 1 for i < n, one thread per word. PTX ISA 7.0 for
 * sm_75, so any driver since CUDA 11 JIT-compiles it for the GPU at hand (checked with
 * `ptxas -arch=sm_90`). */
static const char twice_ptx[] = ".version 7.0\n"
                                ".target sm_75\n"
                                ".address_size 64\n"
                                ".visible .entry twice_in_place(.param .u64 pa, .param .u32 pn)\n"
                                "{\n"
                                "  .reg .pred p;\n"
                                "  .reg .b32 r<8>;\n"
                                "  .reg .b64 rd<5>;\n"
                                "  ld.param.u64 rd1, [pa];\n"
                                "  ld.param.u32 r1, [pn];\n"
                                "  mov.u32 r2, %ctaid.x;\n"
                                "  mov.u32 r3, %ntid.x;\n"
                                "  mov.u32 r4, %tid.x;\n"
                                "  mad.lo.s32 r5, r2, r3, r4;\n"
                                "  setp.ge.u32 p, r5, r1;\n"
                                "  @p bra DONE;\n"
                                "  cvta.to.global.u64 rd2, rd1;\n"
                                "  mul.wide.u32 rd3, r5, 4;\n"
                                "  add.s64 rd4, rd2, rd3;\n"
                                "  ld.global.u32 r6, [rd4];\n"
                                "  mad.lo.s32 r7, r6, 2, 1;\n"
                                "  st.global.u32 [rd4], r7;\n"
                                "DONE:\n"
                                "  ret;\n"
                                "}\n";

typedef struct roundtrip_fig {
    cubec_device *dev;
    cubec_stream stream;
    cubec_buffer a, out; /* a: written, doubled, read; out: cubec's copy of it */
    cubec_kernel write, twice;
    uint32_t seed; /* the last repetition's */
    /* CUDA's side (NULL in the baseline): the primary context, pushed on this thread from setup
     * to teardown, its stream, module, kernel, and a's address there. */
    const cuda_driver *cu;
    cu_device cu_dev;
    cu_context ctx;
    cu_stream cs;
    cu_module module;
    cu_function fn;
    cu_deviceptr a_ptr;
    int mapped;
} roundtrip_fig;

static bench_err cuda_try(const roundtrip_fig *f, cu_result r, const char *what)
{
    return r ? bench_from_status(cuda_status(f->cu, r, what), what) : NULL;
}

bench_err bench_cuda_roundtrip_unavailable(const bench_params *params)
{
    const cuda_driver *cu = NULL;
    cubec_status st = cuda_driver_get(&cu);
    if (st) {
        bench_err why = bench_errorf("needs libcuda: %s", cubec_status_message(st));
        cubec_status_free(st);
        return why;
    }
    if (params->vendor_id != 0x10de)
        return bench_errorf("needs an NVIDIA GPU (the device's vendor is 0x%04x)",
                            params->vendor_id);
    if (!(params->external_handles & CUBEC_EXTERNAL_TIMELINE_FD))
        return bench_errorf("the device cannot export its timeline (CUBEC_EXTERNAL_TIMELINE_FD)");
    return NULL;
}

static bench_err kernel(cubec_device *d, const char *name, const char *src, cubec_kernel *out)
{
    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    kd.name = name;
    kd.glsl = src;
    return bench_from_status(cubec_kernel_create(d, &kd, out), name);
}

static bench_err launch(roundtrip_fig *f, cubec_kernel k, cubec_buffer b)
{
    struct {
        uint32_t n, seed;
    } info = {WORDS, f->seed};
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = k;
    ld.buffers = &b;
    ld.buffer_count = 1;
    ld.info = &info;
    ld.info_size = sizeof info;
    ld.groups[0] = WORDS / GROUP;
    ld.groups[1] = ld.groups[2] = 1;
    return bench_from_status(cubec_launch(f->dev, f->stream, &ld), "cubec_launch");
}

/* The CUDA side: a's mapping, the primary context made current, the module and a stream. */
static bench_err cuda_setup(roundtrip_fig *f)
{
    cubec_cuda_mapping m = CUBEC_CUDA_MAPPING_INIT;
    CU_TRY(cubec_cuda_map(f->dev, f->a, &m));
    f->mapped = 1;
    f->a_ptr = m.device_ptr;
    CU_TRY(cuda_driver_get(&f->cu));
    BENCH_TRY(cuda_try(f, f->cu->device_get(&f->cu_dev, m.cuda_device), "cuDeviceGet"));
    BENCH_TRY(
        cuda_try(f, f->cu->primary_ctx_retain(&f->ctx, f->cu_dev), "cuDevicePrimaryCtxRetain"));
    cu_result r = f->cu->ctx_push(f->ctx);
    if (r) {
        /* Not pushed: teardown must not pop it. */
        f->cu->primary_ctx_release(f->cu_dev);
        f->ctx = NULL;
        return cuda_try(f, r, "cuCtxPushCurrent");
    }
    BENCH_TRY(cuda_try(f, f->cu->module_load_data(&f->module, twice_ptx), "cuModuleLoadData"));
    BENCH_TRY(cuda_try(f, f->cu->module_get_function(&f->fn, f->module, "twice_in_place"),
                       "cuModuleGetFunction"));
    return cuda_try(f, f->cu->stream_create(&f->cs, 1 /* CU_STREAM_NON_BLOCKING */),
                    "cuStreamCreate");
}

static bench_err setup(void *dev, int with_cuda, void **out_state)
{
    roundtrip_fig *f = calloc(1, sizeof *f);
    *out_state = f;
    if (!f) return bench_errorf("out of host memory");
    f->dev = dev;
    CU_TRY(cubec_stream_new(f->dev, &f->stream));
    CU_TRY(cubec_buffer_create_exportable(f->dev, f->stream, BYTES, &f->a));
    CU_TRY(cubec_buffer_create(f->dev, f->stream, BYTES, &f->out));
    BENCH_TRY(kernel(f->dev, "bench_roundtrip_write", write_src, &f->write));
    if (with_cuda) return cuda_setup(f);
    return kernel(f->dev, "bench_roundtrip_twice", twice_src, &f->twice);
}

static bench_err run(void *state, bench_sample *out)
{
    roundtrip_fig *f = state;
    f->seed++;
    double t0 = bench_now();
    BENCH_TRY(launch(f, f->write, f->a));
    if (f->cu) {
        CU_TRY(cubec_cuda_wait_stream(f->dev, f->stream, f->cs));
        unsigned long long pa = f->a_ptr;
        unsigned int n = WORDS;
        void *args[] = {&pa, &n};
        BENCH_TRY(cuda_try(
            f, f->cu->launch_kernel(f->fn, WORDS / GROUP, 1, 1, GROUP, 1, 1, 0, f->cs, args, NULL),
            "cuLaunchKernel"));
        CU_TRY(cubec_stream_wait_cuda(f->dev, f->stream, f->cs));
    } else {
        BENCH_TRY(launch(f, f->twice, f->a));
    }
    CU_TRY(cubec_copy(f->dev, f->stream, f->a, 0, f->out, 0, BYTES));
    CU_TRY(cubec_sync(f->dev, f->stream));
    out->value = (bench_now() - t0) * 1e6;
    return NULL;
}

static bench_err verify(void *state)
{
    roundtrip_fig *f = state;
    uint32_t *got = malloc(BYTES);
    if (!got) return bench_errorf("out of host memory");
    bench_err err =
        bench_from_status(cubec_read(f->dev, f->stream, f->out, 0, got, BYTES), "cubec_read");
    for (uint32_t i = 0; !err && i < WORDS; i++) {
        uint32_t want = (i * 7u + f->seed) * 2u + 1u;
        if (got[i] != want)
            err = bench_errorf("word %u is %u after repetition %u, want %u (a handoff that did "
                               "not order?)",
                               i, got[i], f->seed, want);
    }
    free(got);
    return err;
}

static void teardown(void *state)
{
    roundtrip_fig *f = state;
    if (!f) return;
    cubec_status_free(cubec_sync(f->dev, f->stream));
    if (f->cu) {
        if (f->cs) f->cu->stream_synchronize(f->cs);
        if (f->cs) f->cu->stream_destroy(f->cs);
        if (f->module) f->cu->module_unload(f->module);
        if (f->ctx) {
            cu_context popped = NULL;
            f->cu->ctx_pop(&popped);
            f->cu->primary_ctx_release(f->cu_dev);
        }
    }
    if (f->mapped) cubec_status_free(cubec_cuda_unmap(f->dev, f->a));
    if (f->write.id) cubec_status_free(cubec_kernel_destroy(f->dev, f->write));
    if (f->twice.id) cubec_status_free(cubec_kernel_destroy(f->dev, f->twice));
    if (f->a.id) cubec_status_free(cubec_buffer_release(f->dev, f->a));
    if (f->out.id) cubec_status_free(cubec_buffer_release(f->dev, f->out));
    free(f);
}

static bench_err cuda_side_setup(void *dev, const bench_params *p, void **out)
{
    (void)p;
    return setup(dev, 1, out);
}

static bench_err cubec_side_setup(void *dev, const bench_params *p, void **out)
{
    (void)p;
    return setup(dev, 0, out);
}

const bench_impl bench_cuda_roundtrip_impl = {cuda_side_setup, run, verify, teardown};
const bench_impl bench_cuda_roundtrip_baseline_impl = {cubec_side_setup, run, verify, teardown};
