/* The contract between the runner (bench_main.c) and the two sides of every figure: cubec
 * (cubec_figures.c) and the raw Vulkan baseline (raw_figures.c).
 *
 * A figure is measured on both sides in one process, one side after the other: the runner opens
 * one side's context (a cubec_device or a raw_ctx), runs all its steps, closes it, and only then
 * opens the other's (two live VkDevices would make the GPU switch contexts between them). Each
 * side implements the same four steps on its own context:
 *   setup   allocate and fill what the work needs (not timed);
 *   run     do the work once, timing only the part the figure defines, and return the value in
 *           the figure's unit (the first runs are a warm-up and are thrown away);
 *   verify  check the result of the runs against the host (once, after the last run);
 *   teardown free everything, also after a failed setup or run.
 * Both sides get the same bench_params, so they do the same amount of the same work.
 *
 * The streams.* figures have no raw Vulkan side (raw Vulkan has no streams): they are measured
 * against cubec itself, each side on its own fresh cubec device as above. The baseline sides of
 * streams.cross and streams.interleave are listed in bench_cubec_baseline_impls (streams.
 * interleave's runs on a device opened with CUBEC_STREAM_STRATEGY=sequential, the runner sets
 * it); streams.independent runs the same
 * implementation once per thread count (bench_params.threads), the 1-thread side being the
 * baseline of all. */
#ifndef CUBEC_BENCH_FIGURE_H
#define CUBEC_BENCH_FIGURE_H

#include "bench_util.h"

#include <stdint.h>

typedef struct bench_params {
    int quick;                 /* --quick: smaller sizes and fewer repetitions            */
    int gpu;                   /* not a CPU device: the GPU sizes of BENCHMARKS.md apply  */
    uint32_t batch;            /* launches per submission (cubec's tasks_max)             */
    uint32_t enqueue_launches; /* launch.enqueue: launches per repetition                 */
    uint32_t chain_launches;   /* launch.device_*: launches per repetition                */
    uint64_t transfer_bytes;   /* write.h2d / read.d2h                                    */
    uint64_t copy_bytes;       /* copy.d2d                                                */
    uint64_t vector_n;         /* kernel.vector_add float elements (a multiple of 4)      */
    uint32_t vector_groups;    /* its workgroups (grid-stride loop over the vec4s)        */
    uint64_t alloc_min_bytes;  /* alloc.pair: sizes double from min to max                */
    uint64_t alloc_max_bytes;
    uint32_t alloc_cycles;      /* passes over all sizes per repetition                    */
    uint32_t salt_base;         /* compile.cold: start of the unique kernel salts          */
    uint32_t threads;           /* streams.independent: threads (and streams) of this side  */
    uint32_t thread_launches;   /* streams.independent: launches per thread per repetition  */
    uint32_t cross_launches;    /* streams.cross: launches in the chain per repetition      */
    uint32_t interleave_rounds; /* streams.interleave: rounds of one launch per stream     */
    uint32_t gemm_n;            /* kernel.gemm_f16: N of the N x N x N multiply            */
    uint64_t features;          /* cubec_feature bits of the device                        */
    int device_timing;          /* profiles read GPU timestamps (cubec_profile_get_method)  */
    uint32_t mlp_steps;         /* memory.peak_ratio: training steps of the MLP loop        */
    uint64_t max_binding;       /* the most bytes one binding may hold on the device        */
    uint32_t vendor_id;         /* cubec_device_info.vendor_id (0x10de: NVIDIA)             */
    uint32_t external_handles;  /* cubec_device_info.external_handles (CUBEC_EXTERNAL_*)    */
} bench_params;

/* One repetition's result: the figure's value, and optionally a device-time value measured with
 * timestamps in the same unit (NaN when the side has none). */
typedef struct bench_sample {
    double value;
    double device_value;
    /* The run measured nothing on purpose and 0 is its true value (profile.empty with Device
     * timing: an empty window reads no timestamps); any other value must be positive. */
    int zero_ok;
} bench_sample;

typedef struct bench_impl {
    bench_err (*setup)(void *ctx, const bench_params *params, void **out_state);
    bench_err (*run)(void *state, bench_sample *out_sample);
    bench_err (*verify)(void *state);
    void (*teardown)(void *state); /* accepts NULL and partially set-up states */
    /* Optional (NULL: nothing): what the run found out that the figure's fixed note cannot know,
     * as a malloc'd string the runner frees, asked after verify. The multi.* rows name the path
     * cubec_device_get_path reports for their pair of devices, which differs by machine. */
    char *(*describe)(void *state);
} bench_impl;

/* Each side lists its implementations by figure name. */
typedef struct bench_impl_entry {
    const char *name;
    const bench_impl *impl;
} bench_impl_entry;

extern const bench_impl_entry bench_cubec_impls[];
extern const bench_impl_entry bench_raw_impls[];
/* The baseline sides of the figures measured against cubec itself, by figure name. */
extern const bench_impl_entry bench_cubec_baseline_impls[];

/* compile.warm_disk (warm_disk.c): cubec's side, its baseline (the same without the disk cache),
 * the child process each repetition runs (`cubec bench --warm-disk-child SALT`: returns the exit
 * status), and the run's own cache directory (begin sets CUBEC_CACHE_DIR to a new temporary
 * directory unless it is set, so that the salted kernels stay out of the user's cache; end
 * removes it). */
/* kernel.gemm_f16 (gemm_f16.c): cooperative matrices, and its baseline, a scalar tiled multiply
 * of the same data on the same device. */
extern const bench_impl bench_gemm_f16_impl;
extern const bench_impl bench_gemm_f16_scalar_impl;

extern const bench_impl bench_warm_disk_impl;
extern const bench_impl bench_warm_disk_baseline_impl;
int bench_warm_disk_child(const char *salt_text);
void bench_cache_dir_begin(char *dir, size_t cap);
void bench_cache_dir_end(const char *dir);

/* compile.batch64 (compile_batch.c): 64 kernels through the compile queue, and its baseline, the
 * same kernels created one after another. */
extern const bench_impl bench_batch64_impl;
extern const bench_impl bench_batch64_serial_impl;
/* memory.relocate (relocate_figure.c): cubec relocating live bytes off outdated arena pages, and
 * its baseline, cubec_copy of the same bytes. */
extern const bench_impl bench_relocate_impl;
extern const bench_impl bench_relocate_copy_impl;

/* image.write / image.read (image_figures.c): cubec_image_write + sync / cubec_image_read of an
 * rgba8 image of odd rows, and their baselines, cubec_write / cubec_read of the same bytes into
 * a buffer. */
extern const bench_impl bench_image_write_impl, bench_image_write_baseline_impl;
extern const bench_impl bench_image_read_impl, bench_image_read_baseline_impl;
#define BENCH_IMAGE_NOTE                                                                           \
    "cubec only: rgba8, 2047 x 2048 (1023 x 1024 --quick, 4095 x 4096 on a GPU), rows not a "      \
    "multiple of 256 bytes; baseline: the same bytes to or from a buffer"

/* multi.copy_peer.{1,16,256}MiB (multi_figures.c): cubec_copy_peer to a second device, and its
 * baseline, cubec_copy of the same bytes on one device. */
extern const bench_impl bench_copy_peer_1_impl, bench_copy_peer_1_baseline_impl;
extern const bench_impl bench_copy_peer_16_impl, bench_copy_peer_16_baseline_impl;
extern const bench_impl bench_copy_peer_256_impl, bench_copy_peer_256_baseline_impl;
/* multi.copy_peer_exportable.{1,16,256}MiB: the same between buffers made by
 * cubec_buffer_create_exportable on both sides, the only ones the cuda-interop path copies. */
extern const bench_impl bench_copy_peer_exportable_1_impl,
    bench_copy_peer_exportable_1_baseline_impl;
extern const bench_impl bench_copy_peer_exportable_16_impl,
    bench_copy_peer_exportable_16_baseline_impl;
extern const bench_impl bench_copy_peer_exportable_256_impl,
    bench_copy_peer_exportable_256_baseline_impl;
/* The path of the pair src -> dst as cubec_device_get_path reports it, and the path a
 * cubec_copy_peer between such buffers (`exportable` or plain) takes on it, saying when that
 * falls back to host-staged: a malloc'd note (NULL when out of memory). */
char *bench_peer_path_note(cubec_device *src, cubec_device *dst, int exportable);

/* multi.allreduce.{1,16,256}MiB (allreduce_figure.c): cubec_comm_all_reduce over 2 ranks, as bus
 * bandwidth; its baseline is multi.copy_peer's cubec side (a peer copy of the same bytes). */
extern const bench_impl bench_allreduce_1_impl, bench_allreduce_16_impl, bench_allreduce_256_impl;
/* Why the size cannot run on the device, or NULL (see allreduce_figure.c). */
bench_err bench_allreduce_1_unavailable(const bench_params *params);
bench_err bench_allreduce_16_unavailable(const bench_params *params);
bench_err bench_allreduce_256_unavailable(const bench_params *params);
#define BENCH_ALLREDUCE_NOTE                                                                       \
    "f32 sum over 2 ranks (the device and a second open of it); bus bandwidth as NCCL's tests "    \
    "define it: 2(n-1)/n * bytes / time, n = 2; baseline: cubec_copy_peer of the same bytes"

/* multi.cuda_roundtrip (cuda_roundtrip.c): a cubec kernel writes, a CUDA kernel reads and writes
 * the same memory, cubec reads it, and the baseline runs the same three kernels in cubec alone.
 * `unavailable` says why it cannot run here (no libcuda, not an NVIDIA GPU, no exportable
 * timeline), or NULL. */
extern const bench_impl bench_cuda_roundtrip_impl, bench_cuda_roundtrip_baseline_impl;
bench_err bench_cuda_roundtrip_unavailable(const bench_params *params);
#define BENCH_CUDA_ROUNDTRIP_NOTE                                                                  \
    "1 MiB: cubec kernel writes -> cubec_cuda_wait_stream -> CUDA kernel (PTX) x*2+1 in place -> " \
    "cubec_stream_wait_cuda -> cubec copies it out, wall time to one cubec_sync; baseline: the "   \
    "same three kernels in cubec on one stream; overhead = value - baseline"

/* The tiny kernel of the launch figures: one workgroup of 64 threads each adding `step` to one
 * uint of a 256-byte buffer. */
#define BENCH_TINY_WORDS 64u
/* Workgroup size of kernel.vector_add, and the most workgroups it launches (on the H200 the vec4
 * kernel is fastest with 65535..131072 groups of 256; fewer where the device allows fewer). */
#define BENCH_VECTOR_WG 256u
#define BENCH_VECTOR_MAX_GROUPS 131072u
/* Stride between the disjoint ranges of launch.device_independent: a multiple of any device's
 * minStorageBufferOffsetAlignment (at most 256 by the Vulkan spec). */
#define BENCH_RANGE_STRIDE 256u
/* Seeds of the patterns that the transfer and copy figures move and check. */
#define BENCH_TRANSFER_SEED 0x5eedu
#define BENCH_COPY_SEED 0xc0b1u
/* streams.independent: the most threads a side runs (one stream and one buffer each). */
#define BENCH_MAX_THREADS 8u
/* streams.interleave: the streams (one chain each) launched round-robin from one thread. */
#define BENCH_INTERLEAVE_STREAMS 4u

#endif
