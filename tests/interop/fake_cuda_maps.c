/* A stand-in for libcuda.so.1 that maps cubec buffers the way CUDA would, on a CPU Vulkan device
 * (lavapipe): one "CUDA device" whose UUID is $FAKE_CUDA_UUID (32 hex digits: the cubec device's,
 * so cubec_cuda_map finds it), and cuImportExternalMemory mmaps the opaque fd, so a "device
 * pointer" is a host address of the buffer's very bytes, which a test can read and write. Linked
 * with fake_cuda.c (FAKE_CUDA_FULL, FAKE_CUDA_WEAK) for every other entry point, which fail. The
 * counters (fake_cuda_*) let a test see imports freed and contexts released; no CUDA is needed to
 * build it. Used by tests/python/test_dlpack_fake_cuda.py. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "interop/cuda_driver.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

/* One imported allocation. */
typedef struct fake_memory {
    char *file; /* the whole file mapped */
    size_t length;
    char *base; /* the allocation's first byte in it */
    size_t size;
} fake_memory;

static int live_imports;
static int context_releases;

FAKE_EXPORT int fake_cuda_live_imports(void)
{
    return live_imports;
}

FAKE_EXPORT int fake_cuda_context_releases(void)
{
    return context_releases;
}

FAKE_EXPORT int cuInit(unsigned int flags)
{
    (void)flags;
    return 0;
}

FAKE_EXPORT int cuDeviceGetCount(int *count)
{
    *count = 1;
    return 0;
}

FAKE_EXPORT int cuDeviceGet(cu_device *device, int ordinal)
{
    *device = ordinal;
    return ordinal == 0 ? 0 : 101; /* CUDA_ERROR_INVALID_DEVICE */
}

static int hex(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

FAKE_EXPORT int cuDeviceGetUuid_v2(cu_uuid *uuid, cu_device device)
{
    (void)device;
    memset(uuid->bytes, 0, sizeof uuid->bytes);
    const char *text = getenv("FAKE_CUDA_UUID");
    for (int i = 0; text && i < 16 && hex(text[2 * i]) >= 0 && hex(text[2 * i + 1]) >= 0; i++)
        uuid->bytes[i] = (char)(hex(text[2 * i]) * 16 + hex(text[2 * i + 1]));
    return 0;
}

static int context_object;

FAKE_EXPORT int cuDevicePrimaryCtxRetain(cu_context *ctx, cu_device device)
{
    (void)device;
    *ctx = (cu_context)(void *)&context_object;
    return 0;
}

FAKE_EXPORT int cuDevicePrimaryCtxRelease_v2(cu_device device)
{
    (void)device;
    context_releases++;
    return 0;
}

FAKE_EXPORT int cuCtxPushCurrent_v2(cu_context ctx)
{
    (void)ctx;
    return 0;
}

FAKE_EXPORT int cuCtxPopCurrent_v2(cu_context *ctx)
{
    *ctx = (cu_context)(void *)&context_object;
    return 0;
}

/* CUDA takes the fd when the import succeeds: the mapping keeps the memory, the fd goes.
 * lavapipe's opaque fd is a memfd laid out by Mesa's os_malloc_aligned_fd: a header whose second
 * 64-bit word is where the allocation's bytes start (a page in), so the whole file is mapped and
 * the bytes are found there. */
FAKE_EXPORT int cuImportExternalMemory(cu_ext_memory *out, const cu_ext_memory_desc *desc)
{
    struct stat st;
    if (desc->type != CU_EXT_MEMORY_OPAQUE_FD || !desc->size || fstat(desc->handle.fd, &st) ||
        (unsigned long long)st.st_size < desc->size)
        return 1; /* CUDA_ERROR_INVALID_VALUE */
    size_t length = (size_t)st.st_size;
    char *file = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, desc->handle.fd, 0);
    if (file == MAP_FAILED) return 1;
    uint64_t start = 0;
    if (length >= 16) memcpy(&start, file + 8, sizeof start);
    if (start % 4096 || start + desc->size > length) start = 0; /* no header: bytes from 0 */
    fake_memory *m = malloc(sizeof *m);
    if (!m) {
        munmap(file, length);
        return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    }
    m->file = file;
    m->length = length;
    m->base = file + start;
    m->size = desc->size;
    close(desc->handle.fd);
    live_imports++;
    *out = (cu_ext_memory)(void *)m;
    return 0;
}

FAKE_EXPORT int cuExternalMemoryGetMappedBuffer(cu_deviceptr *out, cu_ext_memory mem,
                                                const cu_ext_buffer_desc *desc)
{
    fake_memory *m = (fake_memory *)(void *)mem;
    if (desc->offset + desc->size > m->size) return 1;
    *out = (cu_deviceptr)(uintptr_t)(m->base + desc->offset);
    return 0;
}

FAKE_EXPORT int cuMemFree_v2(cu_deviceptr ptr)
{
    (void)ptr;
    return 0;
}

FAKE_EXPORT int cuDestroyExternalMemory(cu_ext_memory mem)
{
    fake_memory *m = (fake_memory *)(void *)mem;
    munmap(m->file, m->length);
    free(m);
    live_imports--;
    return 0;
}
