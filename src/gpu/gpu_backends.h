/* The GPU backends cubec is built with: one row each, X(name, open, count, peek), the first row the
 * default. Every place that names backends is generated from this list: the gpu_backend enum
 * (GPU_BACKEND_<name>) and gpu_backend_parse, gpu_open, gpu_device_count and gpu_device_peek
 * (gpu/gpu.c), the choices of CUBEC_BACKEND (base/config.c), the list `cubec info` prints
 * (cubec_backend_names); test_bad_config checks that docs/configuration.md names each of them.
 * A new backend is a directory under src/gpu/, its header included by gpu/gpu.c, and one row.
 *
 *   name   the backend's name in CUBEC_BACKEND and cubec_device_desc.backend (a C identifier)
 *   open   cubec_status open(const gpu_open_desc *desc, gpu **out)
 *   count  cubec_status count(uint32_t *out_count): devices present, without opening one
 *   peek   cubec_status peek(uint32_t index, cubec_device_info *out): a device's info, unopened
 *
 * The functions are only named here; gpu/gpu.c, which includes each backend's header, is the one
 * place that expands them. This header includes nothing, so that base/config.c can read the names
 * without depending on the seam. */
#ifndef CUBEC_GPU_GPU_BACKENDS_H
#define CUBEC_GPU_GPU_BACKENDS_H

#define GPU_BACKENDS(X)                                                                            \
    X(vulkan, vk_gpu_open, vk_gpu_count, vk_gpu_peek)                                              \
    X(null, null_gpu_open, null_gpu_count, null_gpu_peek)                                          \
    X(webgpu, wg_gpu_open, wg_gpu_count, wg_gpu_peek)

/* The names joined by '|' ("vulkan|null|webgpu"): the list is built with a '|' before each name and
 * read from its second character. */
#define GPU_BACKEND_BAR_NAME_(name, open, count, peek) "|" #name
#define GPU_BACKEND_CHOICES (&(GPU_BACKENDS(GPU_BACKEND_BAR_NAME_))[1])

#endif
