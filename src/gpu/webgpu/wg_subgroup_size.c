/* The subgroup sizes of a WebGPU device where the implementation does not report them:
 * wgpu-native 29 leaves WGPUAdapterInfo's subgroupMinSize and subgroupMaxSize 0, so cubec
 * measured nothing and said 1, where kernels run with 8 on lavapipe and 32 on an NVIDIA GPU.
 * One small kernel at open records the smallest and largest @builtin(subgroup_size) its
 * invocations see (docs/device.md, "The WebGPU backend"). */
#include "gpu/webgpu/wg_subgroup_size.h"

#include "base/log.h"

#include <string.h>

/* wgpu-native's naga takes the subgroup built-ins without `enable subgroups;` (and refuses the
 * directive); only wgpu-native is measured, so the source is written for it. Several workgroups
 * of 256: a device whose size varies with the dispatch shows its range. */
static const char measure_wgsl[] =
    "@group(0) @binding(0) var<storage, read_write> o: array<atomic<u32>, 2>;\n"
    "@compute @workgroup_size(256)\n"
    "fn main(@builtin(subgroup_size) size: u32) {\n"
    "    atomicMin(&o[0], size);\n"
    "    atomicMax(&o[1], size);\n"
    "}\n";

/* Runs the kernel and reads its two words into out[0..2); 0 when it ran. */
static int run(wg_gpu *w, WGPUComputePipeline pipeline, WGPUBindGroupLayout bgl, uint32_t out[2])
{
    const wg_procs *p = w->p;
    WGPUBufferDescriptor bd = {.usage = WGPUBufferUsage_Storage | WGPUBufferUsage_CopySrc |
                                        WGPUBufferUsage_CopyDst,
                               .size = 8};
    WGPUBuffer buf = p->DeviceCreateBuffer(w->device, &bd);
    WGPUBufferDescriptor md = {.usage = WGPUBufferUsage_MapRead | WGPUBufferUsage_CopyDst,
                               .size = 8};
    WGPUBuffer map = p->DeviceCreateBuffer(w->device, &md);
    int failed = 1;
    if (buf && map) {
        const uint32_t init[2] = {UINT32_MAX, 0};
        p->QueueWriteBuffer(w->queue, buf, 0, init, sizeof init);
        WGPUBindGroupEntry e = {.binding = 0, .buffer = buf, .offset = 0, .size = 8};
        WGPUBindGroupDescriptor gd = {.layout = bgl, .entryCount = 1, .entries = &e};
        WGPUBindGroup group = p->DeviceCreateBindGroup(w->device, &gd);
        WGPUCommandEncoderDescriptor ed = {0};
        WGPUCommandEncoder enc = group ? p->DeviceCreateCommandEncoder(w->device, &ed) : NULL;
        if (enc) {
            WGPUComputePassDescriptor pd = {0};
            WGPUComputePassEncoder pass = p->CommandEncoderBeginComputePass(enc, &pd);
            p->ComputePassEncoderSetPipeline(pass, pipeline);
            p->ComputePassEncoderSetBindGroup(pass, 0, group, 0, NULL);
            p->ComputePassEncoderDispatchWorkgroups(pass, 4, 1, 1);
            p->ComputePassEncoderEnd(pass);
            p->ComputePassEncoderRelease(pass);
            p->CommandEncoderCopyBufferToBuffer(enc, buf, 0, map, 0, 8);
            WGPUCommandBufferDescriptor cd = {0};
            WGPUCommandBuffer cb = p->CommandEncoderFinish(enc, &cd);
            p->CommandEncoderRelease(enc);
            if (cb) {
                p->QueueSubmit(w->queue, 1, &cb);
                p->CommandBufferRelease(cb);
                failed = wg_map_read(w, map, 8, 0, out, 8, 0) != 0;
            }
        }
        if (group) p->BindGroupRelease(group);
    }
    if (buf) p->BufferRelease(buf);
    if (map) p->BufferRelease(map);
    return failed;
}

void wg_measure_subgroup_size(wg_gpu *w, cubec_device_info *info)
{
    const wg_procs *p = w->p;
    WGPUBindGroupLayoutEntry e = {.binding = 0,
                                  .visibility = WGPUShaderStage_Compute,
                                  .buffer = {.type = WGPUBufferBindingType_Storage}};
    WGPUBindGroupLayoutDescriptor d = {.entryCount = 1, .entries = &e};
    WGPUBindGroupLayout bgl = p->DeviceCreateBindGroupLayout(w->device, &d);
    WGPUPipelineLayoutDescriptor ld = {.bindGroupLayoutCount = 1, .bindGroupLayouts = &bgl};
    WGPUPipelineLayout layout = bgl ? p->DeviceCreatePipelineLayout(w->device, &ld) : NULL;
    WGPUShaderSourceWGSL src = {.chain = {.sType = WGPUSType_ShaderSourceWGSL},
                                .code = wg_str(measure_wgsl)};
    WGPUComputePipeline pipeline = NULL;
    cubec_status err = layout ? wg_build_pipeline(w, &src.chain, "cubec.webgpu.subgroup_size",
                                                  "main", NULL, NULL, 0, layout, &pipeline)
                              : status_make(CUBEC_INTERNAL, "no pipeline layout");
    uint32_t seen[2] = {0, 0};
    if (!err && run(w, pipeline, bgl, seen)) err = status_make(CUBEC_INTERNAL, "the run failed");
    if (!err) err = wg_take_error(w, "running the kernel");
    /* Sizes are powers of two from 1 to 128 in every API; anything else is not believed. */
    if (!err && (!seen[0] || seen[0] > seen[1] || seen[1] > 128 || (seen[0] & (seen[0] - 1)) ||
                 (seen[1] & (seen[1] - 1))))
        err = status_make(CUBEC_INTERNAL, "it saw sizes %u to %u", seen[0], seen[1]);
    if (err) {
        LOG(LOG_WARN, LOG_SYS_DEVICE,
            "webgpu: the subgroup size is not known (measuring it: %s); said to be %u",
            cubec_status_message(err), info->subgroup_size);
        cubec_status_free(err);
    } else {
        /* No size control on WebGPU: a kernel runs with what the device picks, in this range;
         * the largest is what most kernels see. */
        info->subgroup_size = seen[1];
        info->min_subgroup_size = seen[0];
        info->max_subgroup_size = seen[1];
    }
    if (pipeline) p->ComputePipelineRelease(pipeline);
    if (layout) p->PipelineLayoutRelease(layout);
    if (bgl) p->BindGroupLayoutRelease(bgl);
}
