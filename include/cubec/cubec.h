/* cubec — a GPU compute runtime for C on Vulkan.
 *
 * One header is the whole public API. Conventions that hold for every function:
 *  - A function that can fail returns a cubec_status: NULL means success; otherwise the caller
 *    owns the status and frees it with cubec_status_free(). The message names the argument and
 *    the value that were refused, or the root cause of a fault.
 *  - A returned error means nothing was queued and nothing already written was changed.
 *  - Out-parameters come last, are named out_*, are cleared on entry and written only on success.
 *  - Handles are opaque. Buffers, kernels, graphs and profiles are generation-counted ids: a
 *    released or stale id, one from another device, or a made-up one is detected and refused
 *    with CUBEC_INVALID_ARGUMENT (graphs: CUBEC_GRAPH_STATE), never dereferenced; the message
 *    says which it was. Release/destroy functions accept a zero handle. The device pointer is
 *    checked too: a call on a closed device, or on a pointer cubec_device_open did not return,
 *    is refused with CUBEC_INVALID_ARGUMENT naming it, never dereferenced (docs/api.md).
 *  - Desc structs are read only during the call; a zeroed field means "the default".
 *  - Structs that may grow carry their size first (struct_size) and have a CUBEC_<NAME>_INIT
 *    macro that sets it: start every one with it (see "Structs that grow" below).
 *  - Every function is thread-safe: one device lock orders the calls of all threads (GPU waits
 *    and kernel compilation release it).
 */
#ifndef CUBEC_CUBEC_H
#define CUBEC_CUBEC_H

#include <stddef.h>
#include <stdint.h>
/* CUBEC_CHECK (below) needs <stdio.h> and <stdlib.h>. Where they cannot be found (a binding's
 * declaration extractor that preprocesses this header without the C library's headers), or
 * where CUBEC_NO_CHECK_HELPER is defined, the helper is left out and nothing else changes. */
#if !defined(CUBEC_NO_CHECK_HELPER) && defined(__has_include)
#if !__has_include(<stdio.h>) || !__has_include(<stdlib.h>)
#define CUBEC_NO_CHECK_HELPER
#endif
#endif
#ifndef CUBEC_NO_CHECK_HELPER
#include <stdio.h>  /* fprintf in CUBEC_CHECK */
#include <stdlib.h> /* exit in CUBEC_CHECK */
#endif

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* The version of this header. CMake reads these three lines (the one place the version is
 * written) and names the shared library after them: its soname is libcubec.so.MAJOR.MINOR while
 * MAJOR is 0 and libcubec.so.MAJOR after, and an incompatible change to the ABI moves it
 * (docs/api.md, "Versions and the ABI"). */
#define CUBEC_VERSION_MAJOR 0
#define CUBEC_VERSION_MINOR 2
#define CUBEC_VERSION_PATCH 14

/* A version packed into one number that compares in order: major << 16 | minor << 8 | patch
 * (minor and patch stay below 256). */
#define CUBEC_MAKE_VERSION(major, minor, patch)                                                    \
    (((uint32_t)(major) << 16) | ((uint32_t)(minor) << 8) | (uint32_t)(patch))
/* The version of this header, packed: compare it with cubec_version() to refuse a library that
 * is not the one a program (or a binding) was built for. */
#define CUBEC_VERSION                                                                              \
    CUBEC_MAKE_VERSION(CUBEC_VERSION_MAJOR, CUBEC_VERSION_MINOR, CUBEC_VERSION_PATCH)

/* Structs that grow (docs/api.md, "Struct growth"). Each struct the library reads or writes
 * whole carries its size as its first member, `struct_size`, which the caller sets with the
 * struct's CUBEC_<NAME>_INIT macro (a designated initializer: add the fields after it, or write
 * `.struct_size = sizeof(cubec_<name>)` in a compound literal). The library reads only the bytes
 * the caller declared (the fields past them take their defaults, zero) and writes only that many
 * into an output struct, so a program built against an older header keeps working with a newer
 * library. A struct_size of 0 (the macro forgotten), one below 4 or one larger than the library
 * knows (a program built against a newer header) is refused with CUBEC_INVALID_ARGUMENT naming
 * the argument, the value and the macro, and nothing is written. */

/* Marks a name kept for one release after its rename (docs/api.md, "Naming"): the compiler warns
 * at each use and names the new one. */
#if defined(__GNUC__) || defined(__clang__)
#define CUBEC_DEPRECATED(message) __attribute__((deprecated(message)))
#else
#define CUBEC_DEPRECATED(message)
#endif

/* Marks a function whose result must not be dropped: every function that returns a cubec_status
 * carries it, since a dropped status is both a missed error and a leak. The compiler then warns
 * about a call that ignores the result (GCC even through a cast to void). */
#if defined(__GNUC__) || defined(__clang__)
#define CUBEC_MUST_USE __attribute__((warn_unused_result))
#else
#define CUBEC_MUST_USE
#endif

/* ---------------------------------------------------------------------------------------------
 * Status
 * ------------------------------------------------------------------------------------------- */

/* Every status code, one row each: X(name, value, what it means). The list generates the enum and
 * cubec_code_name; a program may expand it too (X is a macro of three arguments). */
#define CUBEC_CODES(X)                                                                             \
    X(CUBEC_OK, 0, "success (a NULL status)")                                                      \
    X(CUBEC_INVALID_ARGUMENT, 1, "a bad argument: the message names it and its value")             \
    X(CUBEC_OUT_OF_MEMORY, 2, "device or host memory exhausted, with sizes in the message")        \
    X(CUBEC_COMPILE_FAILED, 3, "GLSL did not compile: shaderc's diagnostics follow")               \
    X(CUBEC_INVALID_SPIRV, 4, "SPIR-V that cannot be reflected or does not fit the rules")         \
    X(CUBEC_UNSUPPORTED, 5, "the device lacks something the call needs")                           \
    X(CUBEC_DEVICE_LOST, 6, "the device is gone; every later call fails the same way")             \
    X(CUBEC_NOT_FOUND, 7, "no device matches CUBEC_DEVICE / the desc")                             \
    X(CUBEC_INTERNAL, 8, "a Vulkan call failed unexpectedly (the VkResult is named)")              \
    X(CUBEC_NOT_READY, 9, "cubec_event_query: the work has not finished yet")                      \
    X(CUBEC_PROFILE_INVALID, 10,                                                                   \
      "a profile saw a launch fail or be skipped: the message says which")                         \
    X(CUBEC_GRAPH_STATE, 11, "a graph call in the wrong state, or an operation a capture refuses") \
    X(CUBEC_TIMEOUT, 12,                                                                           \
      "a wait for the GPU passed [device] wait_timeout: the device is treated as lost")

typedef enum cubec_code {
#define CUBEC_CODE_ENUMERATOR_(name, value, description) name = (value),
    CUBEC_CODES(CUBEC_CODE_ENUMERATOR_)
#undef CUBEC_CODE_ENUMERATOR_
} cubec_code;

/* Fault injection (docs/errors.md): the kinds of fallible calls cubec counts, one row each:
 * X(enumerator, name in CUBEC_FAULT and cubec_fault_kind_name, the call counted). The enumerators
 * are numbered from 0 in this order. */
#define CUBEC_FAULT_KINDS(X)                                                                       \
    X(CUBEC_FAULT_PAGE, "page", "allocating a page of device memory")                              \
    X(CUBEC_FAULT_COMPILE, "compile", "compiling GLSL to SPIR-V")                                  \
    X(CUBEC_FAULT_PIPELINE, "pipeline", "creating a compute pipeline")                             \
    X(CUBEC_FAULT_SUBMIT, "submit", "submitting a command buffer")                                 \
    X(CUBEC_FAULT_MAP, "map", "mapping host-visible memory (staging)")                             \
    X(CUBEC_FAULT_WAIT, "wait", "waiting on the timeline (a failure is a lost device)")            \
    X(CUBEC_FAULT_ENCODE, "encode",                                                                \
      "encoding a batch on the submission thread (a failure is a lost device)")

/* Left as written: clang-format would indent the count as if it continued the list. */
/* clang-format off */
typedef enum cubec_fault_kind {
#define CUBEC_FAULT_KIND_ENUMERATOR_(name, text, description) name,
    CUBEC_FAULT_KINDS(CUBEC_FAULT_KIND_ENUMERATOR_)
#undef CUBEC_FAULT_KIND_ENUMERATOR_
    CUBEC_FAULT_KIND_COUNT /* the number of kinds, not a kind */
} cubec_fault_kind;
/* clang-format on */

typedef struct cubec_status_s *cubec_status;

/* The code of a status; CUBEC_OK for NULL. */
cubec_code cubec_status_code(cubec_status status);
/* The message; "ok" for NULL. Valid until the status is freed. */
const char *cubec_status_message(cubec_status status);
/* The name of a code, e.g. "CUBEC_OUT_OF_MEMORY"; "CUBEC_UNKNOWN_CODE" for a value not in
 * CUBEC_CODES. */
const char *cubec_code_name(cubec_code code);
/* Frees a status; NULL is accepted. */
void cubec_status_free(cubec_status status);
/* A new status of `code` whose message is the printf-style `fmt`, for a callback that fails with
 * an error of its own (an autotune candidate's run): cubec then owns it as any status. CUBEC_OK
 * gives NULL (success). A code not in CUBEC_CODES gives a CUBEC_INVALID_ARGUMENT status naming
 * it, with the message after it. A binding passes "%s" and its text. Never NULL for an error: if
 * the host is out of memory, a static CUBEC_OUT_OF_MEMORY status without the message. */
CUBEC_MUST_USE cubec_status cubec_status_new(cubec_code code, const char *fmt, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The library's version, packed as CUBEC_VERSION packs the header's: a program built against
 * another major version, or (while the major version is 0) another minor one, must not use it. */
uint32_t cubec_version(void);

#ifndef CUBEC_NO_CHECK_HELPER
/* CUBEC_CHECK(call): for programs whose only answer to a failed call is to stop (examples, small
 * tools, a test's setup). It evaluates `call` (anything returning a cubec_status) once; on
 * failure it prints "file:line: call: CODE: message" to stderr, frees the status and exits the
 * process with EXIT_FAILURE. It is a macro so that the message can quote the call and its place,
 * and a statement (do/while), so it cannot be used as a value. A program that must clean up or
 * recover tests the status itself. A binding generator that wants the declarations alone defines
 * CUBEC_NO_CHECK_HELPER before including this header (no <stdio.h>, no <stdlib.h>, no macro). */
#define CUBEC_CHECK(call)                                                                          \
    do {                                                                                           \
        cubec_status cubec_check_status_ = (call);                                                 \
        if (cubec_check_status_) {                                                                 \
            fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call,                      \
                    cubec_code_name(cubec_status_code(cubec_check_status_)),                       \
                    cubec_status_message(cubec_check_status_));                                    \
            cubec_status_free(cubec_check_status_);                                                \
            exit(EXIT_FAILURE);                                                                    \
        }                                                                                          \
    } while (0)
#endif

/* ---------------------------------------------------------------------------------------------
 * Device
 * ------------------------------------------------------------------------------------------- */

typedef struct cubec_device_s cubec_device;

typedef enum cubec_device_type {
    CUBEC_DEVICE_TYPE_OTHER = 0,
    CUBEC_DEVICE_TYPE_INTEGRATED = 1,
    CUBEC_DEVICE_TYPE_DISCRETE = 2,
    CUBEC_DEVICE_TYPE_VIRTUAL = 3,
    CUBEC_DEVICE_TYPE_CPU = 4,
} cubec_device_type;

/* Optional shader features. cubec_device_open enables every one the device has (less those
 * `[device] disable_features` / CUBEC_DISABLE_FEATURES turns off, docs/configuration.md);
 * cubec_device_info.features holds a bit for each enabled one. A kernel whose SPIR-V declares a
 * capability that needs a feature not enabled is refused by cubec_kernel_create with
 * CUBEC_UNSUPPORTED naming the capability. Each comment names the Vulkan feature (or, for
 * subgroups, the VkSubgroupFeatureFlagBits of compute shaders) behind the bit. */
typedef enum cubec_feature {
    CUBEC_FEATURE_INT8 = 1 << 0,                            /* shaderInt8                      */
    CUBEC_FEATURE_INT16 = 1 << 1,                           /* shaderInt16                     */
    CUBEC_FEATURE_INT64 = 1 << 2,                           /* shaderInt64                     */
    CUBEC_FEATURE_FLOAT16 = 1 << 3,                         /* shaderFloat16 (arithmetic)      */
    CUBEC_FEATURE_FLOAT64 = 1 << 4,                         /* shaderFloat64                   */
    CUBEC_FEATURE_STORAGE_BUFFER_8BIT = 1 << 5,             /* storageBuffer8BitAccess         */
    CUBEC_FEATURE_UNIFORM_AND_STORAGE_BUFFER_8BIT = 1 << 6, /* uniformAndStorageBuffer8BitAccess */
    CUBEC_FEATURE_PUSH_CONSTANT_8BIT = 1 << 7,              /* storagePushConstant8            */
    CUBEC_FEATURE_STORAGE_BUFFER_16BIT = 1 << 8,            /* storageBuffer16BitAccess        */
    CUBEC_FEATURE_UNIFORM_AND_STORAGE_BUFFER_16BIT = 1
                                                     << 9, /* uniformAndStorageBuffer16BitAccess */
    CUBEC_FEATURE_PUSH_CONSTANT_16BIT = 1 << 10,           /* storagePushConstant16           */
    CUBEC_FEATURE_INT64_ATOMICS = 1 << 11,                 /* shaderBufferInt64Atomics        */
    CUBEC_FEATURE_VULKAN_MEMORY_MODEL = 1 << 12,           /* vulkanMemoryModel               */
    CUBEC_FEATURE_VULKAN_MEMORY_MODEL_DEVICE_SCOPE = 1 << 13, /* vulkanMemoryModelDeviceScope */
    CUBEC_FEATURE_SUBGROUP_VOTE = 1 << 14,                    /* SUBGROUP_FEATURE_VOTE           */
    CUBEC_FEATURE_SUBGROUP_ARITHMETIC = 1 << 15,              /* SUBGROUP_FEATURE_ARITHMETIC     */
    CUBEC_FEATURE_SUBGROUP_BALLOT = 1 << 16,                  /* SUBGROUP_FEATURE_BALLOT         */
    CUBEC_FEATURE_SUBGROUP_SHUFFLE = 1 << 17,                 /* SUBGROUP_FEATURE_SHUFFLE        */
    CUBEC_FEATURE_SUBGROUP_SHUFFLE_RELATIVE = 1 << 18, /* SUBGROUP_FEATURE_SHUFFLE_RELATIVE */
    CUBEC_FEATURE_SUBGROUP_CLUSTERED = 1 << 19,        /* SUBGROUP_FEATURE_CLUSTERED      */
    CUBEC_FEATURE_SUBGROUP_QUAD = 1 << 20,             /* SUBGROUP_FEATURE_QUAD           */
    /* Added with the capability query: each enabled where the device has its extension (or the
     * Vulkan 1.2 core feature). */
    CUBEC_FEATURE_BUFFER_DEVICE_ADDRESS = 1 << 21, /* bufferDeviceAddress (Vulkan 1.2) */
    CUBEC_FEATURE_SUBGROUP_SIZE_CONTROL = 1 << 22, /* subgroupSizeControl (VK_EXT_) */
    CUBEC_FEATURE_INTEGER_DOT_PRODUCT = 1 << 23,   /* shaderIntegerDotProduct (VK_KHR_) */
    CUBEC_FEATURE_COOPERATIVE_MATRIX = 1 << 24,    /* cooperativeMatrix (VK_KHR_) */
    CUBEC_FEATURE_COOPERATIVE_MATRIX_NV = 1 << 25, /* cooperativeMatrix (VK_NV_) */
    CUBEC_FEATURE_BFLOAT16 = 1 << 26,              /* shaderBFloat16Type (VK_KHR_shader_bfloat16) */
    CUBEC_FEATURE_BFLOAT16_DOT_PRODUCT = 1 << 27,  /* shaderBFloat16DotProduct */
    CUBEC_FEATURE_BFLOAT16_COOPERATIVE_MATRIX = 1 << 28, /* shaderBFloat16CooperativeMatrix */
} cubec_feature;

/* The short name of one feature, as `cubec info` and CUBEC_DISABLE_FEATURES spell it ("float16",
 * "storage_buffer_16bit"); "unknown" for a value that is not exactly one cubec_feature. It takes
 * 64 bits like cubec_device_info.features: bits past 1 << 30, which an enum constant cannot hold,
 * will be macros of type uint64_t. */
const char *cubec_feature_name(uint64_t feature);

typedef struct cubec_device_desc {
    uint32_t struct_size; /* CUBEC_DEVICE_DESC_INIT */
    /* Which device: -1 or unset (0 with `select_by_index` false) means "the best one"
     * (discrete > integrated > virtual > CPU), unless CUBEC_DEVICE says otherwise. */
    int select_by_index; /* non-zero: use `index` */
    uint32_t index;      /* index in Vulkan's enumeration order (see `cubec info`)  */
    const char *name;    /* if set: the first device whose name contains this text */
    /* Non-zero turns on the Khronos validation layer (CUBEC_VALIDATION=1 does too).
     * Validation messages are logged; `on_validation` is also called for each. Threads: it is
     * called on the thread whose Vulkan call the layer reports, which is any thread inside a
     * cubec call on this device (often with the device lock held) or one of cubec's own
     * threads (the submission thread, the compile workers, the thread that frees large pages),
     * and from several at once. It must return quickly and call no cubec function on this
     * device (the lock it may hold is not recursive); `message` lasts only for the call. */
    int validation;
    void (*on_validation)(void *user, const char *message);
    void *on_validation_user;
    /* Tasks recorded before a submission; 0 = config / default (32). */
    uint32_t tasks_max;
    /* The GPU backend: NULL = CUBEC_BACKEND or "vulkan". "null" opens a device that allocates
     * host memory, performs copies and fills, runs no kernels (their outputs count as written)
     * and completes submissions after `null_delay_us`: for testing programs' use of cubec
     * without a GPU, in milliseconds (docs/api.md). */
    const char *backend;
    uint32_t null_delay_us; /* null backend: 0 = CUBEC_NULL_DELAY_US or at once */
    /* Non-zero turns on the bounds-checked mode (`[device] robust` / CUBEC_ROBUST=1 do too):
     * Vulkan's robust buffer access, so that a kernel's load or store past the end of a buffer
     * it was given reads zero or is dropped instead of reaching other memory. Where the device
     * has VK_EXT_robustness2 the check is against each buffer's own size; with
     * robustBufferAccess alone only against its pool page. Device-address (buffer_reference)
     * accesses are never checked. cubec_device_info.robust says what is in force; kernels may
     * run slower (docs/reliability.md, "The bounds-checked mode"). Added last (docs/api.md,
     * "Struct growth"). */
    int robust;
} cubec_device_desc;
/* A cubec_device_desc with its struct_size set: start every one with it ("Structs that grow"). */
#define CUBEC_DEVICE_DESC_INIT                                                                     \
    {                                                                                              \
        .struct_size = sizeof(cubec_device_desc)                                                   \
    }

/* Element types of cooperative matrices (Vulkan's VkComponentTypeKHR, renumbered). */
typedef enum cubec_matrix_type {
    CUBEC_MATRIX_OTHER = 0, /* a type this header does not name (fp8 and packed int8 of NV) */
    CUBEC_MATRIX_FLOAT16 = 1,
    CUBEC_MATRIX_FLOAT32 = 2,
    CUBEC_MATRIX_FLOAT64 = 3,
    CUBEC_MATRIX_BFLOAT16 = 4,
    CUBEC_MATRIX_SINT8 = 5,
    CUBEC_MATRIX_SINT16 = 6,
    CUBEC_MATRIX_SINT32 = 7,
    CUBEC_MATRIX_SINT64 = 8,
    CUBEC_MATRIX_UINT8 = 9,
    CUBEC_MATRIX_UINT16 = 10,
    CUBEC_MATRIX_UINT32 = 11,
    CUBEC_MATRIX_UINT64 = 12,
} cubec_matrix_type;

/* "float16", "sint8"...; "other" for CUBEC_MATRIX_OTHER or a value out of range. */
const char *cubec_matrix_type_name(cubec_matrix_type type);

/* One multiply-add a subgroup can do with cooperative matrices: result (M x N) = A (M x K) *
 * B (K x N) + C (M x N). An element of an array inside cubec_device_info: it never grows (a
 * change is an incompatible one, docs/api.md "Struct growth"). */
typedef struct cubec_matrix_shape {
    uint32_t m, n, k;
    cubec_matrix_type a, b, c, result;
    int saturating; /* integer results saturate (saturatingAccumulation) */
    int nv; /* 1: VK_NV_cooperative_matrix (GLSL fcoopmatNV); 0: VK_KHR_cooperative_matrix */
} cubec_matrix_shape;

#define CUBEC_MAX_MATRIX_SHAPES 48

typedef struct cubec_device_info {
    uint32_t struct_size; /* CUBEC_DEVICE_INFO_INIT */
    char name[256];
    char driver[256];
    uint32_t vendor_id;
    uint32_t device_id;
    uint32_t api_version;
    cubec_device_type type;
    int unified_memory; /* host-visible device-local memory: no staging copies       */
    uint64_t max_storage_buffer_range;
    uint64_t max_allocation_size;
    uint32_t max_push_constants_size;
    uint32_t max_workgroup_count[3];
    uint32_t max_workgroup_size[3];
    uint32_t max_workgroup_invocations;
    uint32_t max_shared_memory_size;
    uint64_t storage_offset_alignment; /* views bound to kernels start at multiples of this */
    uint32_t subgroup_size;
    uint64_t device_local_heap_size;
    double timestamp_period_ns;
    int push_descriptors; /* VK_KHR_push_descriptor is in use                          */
    uint32_t tasks_max;
    /* cubec_feature bits: enabled on this device (cubec_device_get_info), or that the device has
     * and cubec_device_open would enable, the configuration aside (cubec_device_peek). */
    uint64_t features;
    /* cubec_host_register takes addresses and sizes that are multiples of this (the device's
     * minImportedHostPointerAlignment, or the host page size where it cannot import); also
     * filled by cubec_device_peek. */
    uint64_t host_register_alignment;
    /* Also filled by cubec_device_peek. The range of subgroup sizes the device may run a compute
     * kernel with (VK_EXT_subgroup_size_control; both equal subgroup_size without it, where it does
     * not cover compute shaders, and in cubec_device_get_info where disable_features turned
     * subgroup_size_control off): what cubec_kernel_desc.required_subgroup_size may ask. */
    uint32_t min_subgroup_size;
    uint32_t max_subgroup_size;
    /* The subgroup-scope cooperative-matrix shapes the device supports, of the extensions
     * enabled (with cubec_device_peek: that it has): VK_KHR_cooperative_matrix's first, then
     * VK_NV_cooperative_matrix's; at most CUBEC_MAX_MATRIX_SHAPES (the rest are left out). */
    uint32_t matrix_shape_count;
    cubec_matrix_shape matrix_shapes[CUBEC_MAX_MATRIX_SHAPES];
    /* The bounds-checked mode (cubec_device_desc.robust; docs/reliability.md): 0 off;
     * CUBEC_ROBUST_PAGE, robustBufferAccess (an access past a buffer stays within its pool page);
     * CUBEC_ROBUST_BUFFER, robustBufferAccess2 too (it stays within the buffer: reads past it
     * give zero, writes past it are dropped). cubec_device_peek gives what the mode would be.
     * Added in 0.2.0 (docs/api.md, "Struct growth"). */
    int robust;
    /* minUniformBufferOffsetAlignment: a buffer bound as a kernel's uniform block starts at a
     * multiple of this. Every allocation starts at a multiple of the largest of this,
     * storage_offset_alignment and 16, so any buffer can be bound either way. Added in 0.2.4. */
    uint64_t uniform_offset_alignment;
    /* External handles (docs/multi-device.md), CUBEC_EXTERNAL_* bits: what the device can
     * export and import as file descriptors; also filled by cubec_device_peek. Added in
     * 0.2.5. */
    uint32_t external_handles;
    /* The physical device's UUID (Vulkan's VkPhysicalDeviceIDProperties.deviceUUID; CUDA's
     * cudaDeviceProp.uuid of the same GPU): memory imports only between devices whose UUIDs
     * are equal. All zero on the null backend. */
    uint8_t device_uuid[16];
    /* The GPU backend the device is on: "vulkan", "webgpu" or "null" (cubec_device_desc.backend,
     * CUBEC_BACKEND). Added in 0.2.14, as is `capabilities`. */
    char backend[16];
    /* CUBEC_CAPABILITY_* bits: what the device can do that differs between backends and devices,
     * each the answer to one call (below), so that a program asks here instead of trying the call
     * and meeting CUBEC_UNSUPPORTED. Also filled by cubec_device_peek (what an open would give,
     * the configuration aside). Device addresses are the feature bit buffer_device_address,
     * mappings of device memory `unified_memory`, exports `external_handles`. */
    uint32_t capabilities;
} cubec_device_info;
/* A cubec_device_info with its struct_size set: start every one with it ("Structs that grow"). */
#define CUBEC_DEVICE_INFO_INIT                                                                     \
    {                                                                                              \
        .struct_size = sizeof(cubec_device_info)                                                   \
    }

/* Bits of cubec_device_info.external_handles. */
#define CUBEC_EXTERNAL_MEMORY_FD 1u   /* cubec_buffer_export and cubec_buffer_import (opaque fds) */
#define CUBEC_EXTERNAL_TIMELINE_FD 2u /* cubec_timeline_export (an opaque fd) */

/* Bits of cubec_device_info.capabilities (docs/api.md, "Device capabilities"). Where a bit is
 * clear the call it names is refused with CUBEC_UNSUPPORTED, unless it says otherwise. */
#define CUBEC_CAPABILITY_PINNED_HOST_MEMORY 1u /* cubec_host_alloc (not on webgpu) */
/* cubec_host_register imports the range: transfers through it are one DMA copy. Clear: the range
 * is still accepted, and its transfers go through staging (not refused). */
#define CUBEC_CAPABILITY_HOST_IMPORT 2u
#define CUBEC_CAPABILITY_VULKAN_HANDLES 4u /* cubec_device_get_vulkan_handles (vulkan only) */
/* A graph is recorded once into a command buffer that each cubec_graph_replay resubmits. Clear:
 * each replay encodes the graph's commands again (webgpu; the same results, at encoding cost). */
#define CUBEC_CAPABILITY_REUSABLE_GRAPHS 8u
/* The device's timestamp counter and the host clock are sampled together, so profile times are
 * placed on the host clock exactly; clear: bounded by each read (docs/profiling.md). */
#define CUBEC_CAPABILITY_CALIBRATED_CLOCK 16u
/* Profiles are timed by the device (cubec_profile_get_method gives CUBEC_TIMING_DEVICE unless
 * CUBEC_TIMING=system); clear: host-measured (CUBEC_TIMING_SYSTEM). */
#define CUBEC_CAPABILITY_DEVICE_TIMESTAMPS 32u
/* Kernels may declare texel buffers (samplerBuffer, imageBuffer): cubec_kernel_create of one. */
#define CUBEC_CAPABILITY_TEXEL_BUFFERS 64u
#define CUBEC_CAPABILITY_IMAGES 128u /* cubec_image_create (docs/images.md) */
#define CUBEC_CAPABILITY_WGSL 256u   /* cubec_kernel_desc.wgsl kernels (webgpu only) */
/* Launches run kernels; clear on the null backend, where they run none (outputs count as
 * written, their bytes unchanged). */
#define CUBEC_CAPABILITY_RUNS_KERNELS 512u

/* The short name of one capability bit ("pinned_host_memory", "wgsl"), as `cubec info` spells
 * it; "unknown" for a value that is not exactly one CUBEC_CAPABILITY_* bit. */
const char *cubec_capability_name(uint32_t capability);

/* Values of cubec_device_info.robust besides 0. */
#define CUBEC_ROBUST_PAGE 1   /* robustBufferAccess: accesses stay within the pool page */
#define CUBEC_ROBUST_BUFFER 2 /* robustBufferAccess2 too: accesses stay within the buffer */

/* Opens a device. `desc` may be NULL (defaults). */
CUBEC_MUST_USE cubec_status cubec_device_open(const cubec_device_desc *desc,
                                              cubec_device **out_device);
/* Waits for all queued work, frees every buffer, kernel and Vulkan object. NULL is accepted, and
 * so is a device already closed (or a pointer that never was one): ignored, with a warning in
 * the log. Every later call on the pointer is refused (not an open device). */
void cubec_device_close(cubec_device *device);
CUBEC_MUST_USE cubec_status cubec_device_get_info(cubec_device *device,
                                                  cubec_device_info *out_info);
/* Number of Vulkan devices present, and the info of one of them without opening it. */
CUBEC_MUST_USE cubec_status cubec_device_get_count(uint32_t *out_count);
CUBEC_MUST_USE cubec_status cubec_device_peek(uint32_t index, cubec_device_info *out_info);

/* ---------------------------------------------------------------------------------------------
 * Streams
 *
 * A stream is an ordered sequence of work, named by a 64-bit id that belongs to one device.
 * CUBEC_STREAM_CURRENT (0) means "the calling thread's stream": with the default policy
 * (`per-thread`) each OS thread gets its own stream on first use; with the `single` policy
 * (config streaming.policy / CUBEC_STREAM_POLICY) every thread shares one.
 *
 * Work on one stream runs in the order it was queued. Work on different streams is not ordered
 * with respect to each other, with one exception that makes sharing buffers safe: a launch,
 * write, copy or read on stream B of a buffer that was created on stream A runs after the work
 * already queued on A (as if B waited on an event recorded on A just before). A buffer used by
 * another stream stays alive until that stream's use has finished on the GPU, even if its owner
 * releases it.
 *
 * Streams fold onto `max_streams` slots (the stream's number, its low 48 bits, modulo
 * max_streams); two streams on one slot share its
 * ordering and memory pools. A buffer belongs to the stream that created it and is allocated
 * from that stream's pools. Streams need no destruction.
 *
 * A stream id other than CUBEC_STREAM_CURRENT must be one the device handed out
 * (cubec_stream_new, cubec_stream_get_current); any other value is refused with
 * CUBEC_INVALID_ARGUMENT naming the function and the id.
 * ------------------------------------------------------------------------------------------- */

typedef uint64_t cubec_stream;
#define CUBEC_STREAM_CURRENT ((cubec_stream)0)

/* A new stream of this device, distinct from every other stream. */
CUBEC_MUST_USE cubec_status cubec_stream_new(cubec_device *device, cubec_stream *out_stream);
/* The id the calling thread's current stream resolves to (for logs and comparisons). */
CUBEC_MUST_USE cubec_status cubec_stream_get_current(cubec_device *device,
                                                     cubec_stream *out_stream);

/* ---------------------------------------------------------------------------------------------
 * Buffers
 *
 * A buffer is a range of device memory handed out by the device's memory pools. It is valid as
 * soon as it is created; its contents are undefined until written. A view is a sub-range of
 * another buffer that keeps that buffer's memory alive. Memory goes back to the pool when the
 * last reference is released *and* no queued GPU work still uses it.
 * Size 0 is allowed: such a buffer holds no memory, reads and writes of 0 bytes succeed, and it
 * cannot be bound to a kernel.
 * ------------------------------------------------------------------------------------------- */

typedef struct cubec_buffer {
    uint64_t id;
} cubec_buffer;

/* Creates a buffer of `size` bytes from the pools of `stream`, which owns it. */
CUBEC_MUST_USE cubec_status cubec_buffer_create(cubec_device *device, cubec_stream stream,
                                                uint64_t size, cubec_buffer *out_buffer);
/* Creates a buffer of `size` bytes holding a copy of `data`. */
CUBEC_MUST_USE cubec_status cubec_buffer_from(cubec_device *device, cubec_stream stream,
                                              const void *data, uint64_t size,
                                              cubec_buffer *out_buffer);
/* A view of bytes [offset, offset+size) of `buffer` (or of a view: offsets add up). The offset
 * must be a multiple of the device's storage_offset_alignment (cubec_device_info), so that the
 * view can be bound to kernels. */
CUBEC_MUST_USE cubec_status cubec_buffer_view(cubec_device *device, cubec_buffer buffer,
                                              uint64_t offset, uint64_t size,
                                              cubec_buffer *out_view);
CUBEC_MUST_USE cubec_status cubec_buffer_get_size(cubec_device *device, cubec_buffer buffer,
                                                  uint64_t *out_size);
CUBEC_MUST_USE cubec_status cubec_buffer_retain(cubec_device *device, cubec_buffer buffer);
/* Drops one reference; a zero handle is accepted. Returns an error for a stale handle. */
CUBEC_MUST_USE cubec_status cubec_buffer_release(cubec_device *device, cubec_buffer buffer);

/* ---------------------------------------------------------------------------------------------
 * Export and import (docs/multi-device.md)
 *
 * A buffer's memory can be handed to another cubec device of the same physical device (a second
 * cubec_device_open of it) or to CUDA on the same GPU, as an opaque file descriptor; and the
 * device's timeline likewise, so that the other side waits for cubec's work by value. Only
 * buffers created exportable can be exported: Vulkan decides at allocation whether memory can
 * leave the device, so such a buffer gets a page of its own (never shared with another buffer,
 * never moved by relocation, freed only once its last handle is released and the GPU has passed
 * its last use: the export's pin lasts that long). CUBEC_UNSUPPORTED names the device where
 * cubec_device_info.external_handles lacks the bit (the null backend has none).
 * ------------------------------------------------------------------------------------------- */

/* cubec_buffer_create for a buffer whose memory cubec_buffer_export can hand out: a page of its
 * own, of exportable memory. Size 0 is refused (no memory to export). */
CUBEC_MUST_USE cubec_status cubec_buffer_create_exportable(cubec_device *device,
                                                           cubec_stream stream, uint64_t size,
                                                           cubec_buffer *out_buffer);

/* A buffer's memory as another device or API imports it (cubec_buffer_import; CUDA's
 * cudaImportExternalMemory with cudaExternalMemoryHandleTypeOpaqueFd, `allocation_size` as its
 * size, cudaExternalMemoryDedicated when `dedicated`, then
 * cudaExternalMemoryGetMappedBuffer(offset, size)). */
typedef struct cubec_export_info {
    uint32_t struct_size; /* CUBEC_EXPORT_INFO_INIT */
    /* A new file descriptor of the memory on each call, the caller's: it closes it, or hands it to
     * an importer that takes it (cubec_buffer_import and CUDA take it only when they succeed).
     * -1 after a failed call. */
    int fd;
    uint64_t allocation_size; /* bytes of the whole allocation the fd stands for */
    uint64_t offset;          /* where the buffer's (or view's) bytes start in it */
    uint64_t size;            /* the buffer's (or view's) size */
    int dedicated;            /* the allocation is a dedicated one (importers must say so) */
    uint8_t device_uuid[16];  /* cubec_device_info.device_uuid of the exporting device */
} cubec_export_info;
/* A cubec_export_info with its struct_size set: start every one with it ("Structs that grow"). */
#define CUBEC_EXPORT_INFO_INIT                                                                     \
    {                                                                                              \
        .struct_size = sizeof(cubec_export_info), .fd = -1                                         \
    }

/* Fills *out_info for `buffer`, which must have been created by cubec_buffer_create_exportable
 * (or be a view of such a buffer; anything else is refused naming the buffer). The call orders
 * nothing: the importer sees cubec's writes after cubec_sync of the writing stream, or after
 * waiting on the exported timeline for cubec_stream_get_timeline_value. */
CUBEC_MUST_USE cubec_status cubec_buffer_export(cubec_device *device, cubec_buffer buffer,
                                                cubec_export_info *out_info);

/* What cubec_buffer_import imports: the fields of a cubec_export_info (copy them over). */
typedef struct cubec_import_desc {
    uint32_t struct_size; /* CUBEC_IMPORT_DESC_INIT */
    int fd;               /* from cubec_buffer_export on a device of the same physical device */
    /* The exporter's cubec_export_info.allocation_size, unchanged (a driver cannot always tell a
     * wrong one from the fd). */
    uint64_t allocation_size;
    uint64_t offset;         /* a multiple of cubec_device_info.storage_offset_alignment */
    uint64_t size;           /* offset + size within allocation_size; 0 is refused */
    int dedicated;           /* the exporter's cubec_export_info.dedicated, unchanged */
    uint8_t device_uuid[16]; /* the exporter's: compared with this device's */
} cubec_import_desc;
/* A cubec_import_desc with its struct_size set: start every one with it ("Structs that grow"). */
#define CUBEC_IMPORT_DESC_INIT                                                                     \
    {                                                                                              \
        .struct_size = sizeof(cubec_import_desc), .fd = -1                                         \
    }

/* A buffer of `stream` over bytes [offset, +size) of memory another device exported: usable in
 * launches, copies, reads and writes like any buffer, its memory shared with the exporter's
 * (work on the two devices is not ordered with each other: sync the writer before the other
 * side reads). A device of another physical device (device_uuid differs) is refused naming both
 * UUIDs; so are a closed fd, an allocation_size the fd's memory does not have, and offset or
 * size out of range. After success the buffer owns `desc->fd` (closed when its memory is freed:
 * the caller must not close it); after a failure the fd is still the caller's. */
CUBEC_MUST_USE cubec_status cubec_buffer_import(cubec_device *device, cubec_stream stream,
                                                const cubec_import_desc *desc,
                                                cubec_buffer *out_buffer);

/* The device's one timeline semaphore as a new opaque file descriptor, the caller's (CUDA:
 * cudaImportExternalSemaphore with cudaExternalSemaphoreHandleTypeTimelineSemaphoreFd, then
 * cudaWaitExternalSemaphoresAsync on a value from cubec_stream_get_timeline_value). The importer
 * may wait on it; it must never signal it (cubec gives out its values). */
CUBEC_MUST_USE cubec_status cubec_timeline_export(cubec_device *device, int *out_fd);

/* Submits the work `stream` queued so far (cubec_flush) and gives the timeline value that work
 * signals when it has finished: waiting on the exported timeline for *out_value orders after it.
 * 0 when the stream has never submitted work. */
CUBEC_MUST_USE cubec_status cubec_stream_get_timeline_value(cubec_device *device,
                                                            cubec_stream stream,
                                                            uint64_t *out_value);

/* ---------------------------------------------------------------------------------------------
 * CUDA on the same GPU (docs/multi-device.md, "CUDA on the same GPU")
 *
 * cubec loads the CUDA driver (libcuda.so.1, or $CUBEC_CUDA_LIBRARY) when one of these calls first
 * needs it, so cubec builds and runs without CUDA: there every call is CUBEC_UNSUPPORTED naming
 * the library and the loader's reason. The CUDA device is the one whose UUID is the cubec
 * device's (cubec_device_info.device_uuid); CUDA work runs in its primary context.
 * ------------------------------------------------------------------------------------------- */

/* A cubec buffer as CUDA sees it (cubec_cuda_map). */
typedef struct cubec_cuda_mapping {
    uint32_t struct_size; /* CUBEC_CUDA_MAPPING_INIT */
    uint64_t device_ptr;  /* a CUdeviceptr of the buffer's first byte (the primary context's) */
    uint64_t size;        /* the buffer's size: CUDA may reach [device_ptr, +size) */
    int cuda_device;      /* the CUDA device ordinal, -1 after a failed call */
} cubec_cuda_mapping;
/* A cubec_cuda_mapping with its struct_size set: start every one with it ("Structs that grow"). */
#define CUBEC_CUDA_MAPPING_INIT                                                                    \
    {                                                                                              \
        .struct_size = sizeof(cubec_cuda_mapping), .cuda_device = -1                               \
    }

/* Maps `buffer` (created by cubec_buffer_create_exportable, or a view of one) into CUDA: the same
 * memory, no copy. A second call for the buffer gives the same mapping. The mapping orders
 * nothing: CUDA work that reads what cubec wrote is queued after cubec_cuda_wait_stream, and
 * cubec work that reads what CUDA wrote after cubec_stream_wait_cuda. It lasts until
 * cubec_cuda_unmap or the device's close, even past the buffer's release (the memory stays
 * CUDA's until then). */
CUBEC_MUST_USE cubec_status cubec_cuda_map(cubec_device *device, cubec_buffer buffer,
                                           cubec_cuda_mapping *out_mapping);
/* Ends the mapping cubec_cuda_map made; its device_ptr must not be used after. A buffer that is
 * not mapped is refused by name. */
CUBEC_MUST_USE cubec_status cubec_cuda_unmap(cubec_device *device, cubec_buffer buffer);
/* Makes `cuda_stream` (a CUstream of the primary context; NULL, CUDA's default stream) wait on
 * the GPU, through the device's exported timeline, for the work queued on `stream` so far (which
 * this call submits): CUDA work queued on cuda_stream afterwards sees cubec's writes. The caller
 * never waits. Needs CUBEC_EXTERNAL_TIMELINE_FD (cubec_device_info.external_handles). */
CUBEC_MUST_USE cubec_status cubec_cuda_wait_stream(cubec_device *device, cubec_stream stream,
                                                   void *cuda_stream);
/* The other direction: cubec work queued on `stream` after this call runs after the work queued
 * on `cuda_stream` (a CUstream of the primary context; NULL, CUDA's default stream) so far, and
 * host reads and writes on `stream` see what that work wrote. Neither the caller nor any thread
 * waits: CUDA signals a timeline of the device's own that it imported (its "inbound" timeline),
 * and a batch that waits on the GPU for that value is submitted after what `stream` queued
 * before the call; every later batch of the device comes after it. Needs
 * CUBEC_EXTERNAL_TIMELINE_FD; refused while `stream` captures a graph (a replay could not wait
 * for a value of a call made once). */
CUBEC_MUST_USE cubec_status cubec_stream_wait_cuda(cubec_device *device, cubec_stream stream,
                                                   void *cuda_stream);

/* ---------------------------------------------------------------------------------------------
 * Transfers. Offsets and sizes are in bytes within the buffer; offset+size must fit.
 * ------------------------------------------------------------------------------------------- */

/* Copies host memory into the buffer, after all earlier work on the stream that uses it (as for
 * cubec_read, below: a launch uses what it binds and what it declares in address_buffers). The
 * host memory may be reused as soon as the call returns. */
CUBEC_MUST_USE cubec_status cubec_write(cubec_device *device, cubec_stream stream, cubec_buffer dst,
                                        uint64_t offset, const void *src, uint64_t size);
/* Writes a failure instead of bytes: [offset, +size) of `dst` then carries a failure of `code` (an
 * error code of CUBEC_CODES, not CUBEC_OK) whose message is `message`, ordered as cubec_write is
 * (after the earlier work on the stream that uses the buffer). A read, cubec_check or
 * cubec_sync_check of those bytes returns it, a launch that reads them is skipped and passes it on,
 * and a later successful write clears it (docs/errors.md). For code that produces a buffer's bytes
 * outside cubec (a transfer over MPI, another library) and must not leave the old bytes looking
 * like its result when it fails. Does not wait for the GPU. Refused while `stream` records a
 * graph. */
CUBEC_MUST_USE cubec_status cubec_write_failure(cubec_device *device, cubec_stream stream,
                                                cubec_buffer dst, uint64_t offset, uint64_t size,
                                                cubec_code code, const char *message);
/* Copies buffer bytes to host memory after all earlier work on the stream that uses the buffer
 * (the streams' work that writes it, on other streams too); blocks. A launch uses the buffers it
 * binds and those it declares in cubec_launch_desc.address_buffers; one that reaches the buffer
 * through a device address without declaring it is not waited for (cubec_sync first). */
CUBEC_MUST_USE cubec_status cubec_read(cubec_device *device, cubec_stream stream, cubec_buffer src,
                                       uint64_t offset, void *dst, uint64_t size);

/* ---------------------------------------------------------------------------------------------
 * Images (docs/images.md)
 *
 * An image is device memory a kernel reads and writes as texels (GLSL image2D/image3D with a
 * format qualifier): its memory comes from the stream's pools like a buffer's, so ordering,
 * failures (taint) and graphs treat it as they treat a buffer. Its contents are undefined until
 * written. Texels travel to and from the host tightly packed: row after row (x fastest), slice
 * after slice, width * height * depth * cubec_image_format_size bytes.
 * ------------------------------------------------------------------------------------------- */

/* An image handle (cubec_image_create); 0 names none. */
typedef struct cubec_image {
    uint64_t id; /* generation-counted, like every handle */
} cubec_image;

/* Texel formats (the GLSL format qualifier in brackets). */
typedef enum cubec_image_format {
    CUBEC_IMAGE_FORMAT_UNDEFINED = 0,
    CUBEC_IMAGE_FORMAT_R8_UNORM = 1,      /* r8 */
    CUBEC_IMAGE_FORMAT_RGBA8_UNORM = 2,   /* rgba8 */
    CUBEC_IMAGE_FORMAT_R16_SFLOAT = 3,    /* r16f */
    CUBEC_IMAGE_FORMAT_RGBA16_SFLOAT = 4, /* rgba16f */
    CUBEC_IMAGE_FORMAT_R32_SFLOAT = 5,    /* r32f */
    CUBEC_IMAGE_FORMAT_RGBA32_SFLOAT = 6, /* rgba32f */
    CUBEC_IMAGE_FORMAT_R32_UINT = 7,      /* r32ui */
    CUBEC_IMAGE_FORMAT_RGBA32_UINT = 8,   /* rgba32ui */
    CUBEC_IMAGE_FORMAT_R32_SINT = 9,      /* r32i */
} cubec_image_format;

/* What cubec_image_create makes (start it with CUBEC_IMAGE_DESC_INIT). */
typedef struct cubec_image_desc {
    uint32_t struct_size;      /* CUBEC_IMAGE_DESC_INIT */
    cubec_image_format format; /* its texels */
    uint32_t width;            /* texels per row, at least 1 */
    uint32_t height;           /* rows, at least 1 */
    uint32_t depth;            /* 0 or 1: a 2D image; more: a 3D image of that many slices */
} cubec_image_desc;
/* A cubec_image_desc with its struct_size set: start every one with it ("Structs that grow"). */
#define CUBEC_IMAGE_DESC_INIT                                                                      \
    {                                                                                              \
        .struct_size = sizeof(cubec_image_desc)                                                    \
    }

/* Bytes of one texel of `format`; 0 for a value that is not a format. */
uint32_t cubec_image_format_size(cubec_image_format format);
/* Creates an image from the pools of `stream`, which owns it. Refused: a format the device
 * cannot use as a storage image (CUBEC_UNSUPPORTED naming it), a size of 0 or past the device's
 * image limits (CUBEC_INVALID_ARGUMENT naming the value). */
CUBEC_MUST_USE cubec_status cubec_image_create(cubec_device *device, cubec_stream stream,
                                               const cubec_image_desc *desc,
                                               cubec_image *out_image);
/* Drops the image; a zero handle is accepted. Its memory returns to the pools once no queued
 * work uses it. */
CUBEC_MUST_USE cubec_status cubec_image_release(cubec_device *device, cubec_image image);
/* Copies every texel from host memory (`size` must be the image's packed size), after all
 * earlier work on the stream that uses the image; the host memory may be reused at once. */
CUBEC_MUST_USE cubec_status cubec_image_write(cubec_device *device, cubec_stream stream,
                                              cubec_image dst, const void *src, uint64_t size);
/* Copies every texel to host memory after all earlier work on the stream; blocks. A texel
 * carrying a failure returns it, as cubec_read does. */
CUBEC_MUST_USE cubec_status cubec_image_read(cubec_device *device, cubec_stream stream,
                                             cubec_image src, void *dst, uint64_t size);

/* What a launch binds besides its storage buffers (cubec_launch_desc.resources). */
typedef enum cubec_resource_kind {
    CUBEC_RESOURCE_NONE = 0,
    CUBEC_RESOURCE_STORAGE_IMAGE = 1, /* `image` as an image2D/image3D */
    /* `image` with a sampler (`filter`; clamp to edge, normalized coordinates) as a
     * sampler2D/sampler3D: a combined image sampler. */
    CUBEC_RESOURCE_SAMPLED_IMAGE = 2,
    /* `buffer`'s bytes as texels of `format` (docs/images.md, "Texel buffers"): a
     * samplerBuffer/usamplerBuffer/isamplerBuffer (or textureBuffer) read with texelFetch ... */
    CUBEC_RESOURCE_UNIFORM_TEXEL_BUFFER = 3,
    /* ... or an imageBuffer with imageLoad/imageStore. */
    CUBEC_RESOURCE_STORAGE_TEXEL_BUFFER = 4,
    /* `image` as a texture2D/texture3D: a sampled image without a sampler, sampled through a
     * separate `sampler` binding (sampler2D(t, s)) or read with texelFetch. */
    CUBEC_RESOURCE_SAMPLED_TEXTURE = 5,
    /* A `sampler` binding of its own: `filter` (clamp to edge, normalized coordinates). */
    CUBEC_RESOURCE_SAMPLER = 6,
} cubec_resource_kind;

#define CUBEC_FILTER_NEAREST 0u /* cubec_resource.filter: the nearest texel */
#define CUBEC_FILTER_LINEAR 1u  /* cubec_resource.filter: bilinear (trilinear in 3D) filtering */
/* cubec_resource.filter's address modes (Vulkan's VkSamplerAddressMode, the same in every
 * dimension), what coordinates outside [0, 1] read. */
#define CUBEC_ADDRESS_CLAMP_TO_EDGE 0u      /* the edge texel */
#define CUBEC_ADDRESS_REPEAT 0x10u          /* the image tiles: coordinates wrap around */
#define CUBEC_ADDRESS_MIRRORED_REPEAT 0x20u /* the image tiles, every other copy mirrored */

/* One binding of a launch other than a storage buffer. An element of an array whose stride the
 * header fixes: no struct_size (docs/api.md). */
typedef struct cubec_resource {
    cubec_resource_kind kind; /* what is bound */
    uint32_t set;             /* the descriptor set, as the kernel declares it (0..3) */
    uint32_t binding;         /* the binding in that set, as the kernel declares it */
    /* Sampled images and samplers: CUBEC_FILTER_NEAREST (0) or CUBEC_FILTER_LINEAR, or'ed with
     * an address mode (CUBEC_ADDRESS_CLAMP_TO_EDGE, 0, or CUBEC_ADDRESS_REPEAT or
     * CUBEC_ADDRESS_MIRRORED_REPEAT); else 0. */
    uint32_t filter;
    /* Texel buffers: how `buffer`'s bytes are read as texels (a cubec_image_format; 0: the
     * format the kernel declares, which only an imageBuffer does). Else 0. */
    uint32_t format;
    cubec_image image;   /* the image of an image or texture kind */
    cubec_buffer buffer; /* the buffer (or view) of a texel-buffer kind */
} cubec_resource;

/* A wait object for asynchronous work. */
/* ---------------------------------------------------------------------------------------------
 * Host memory (docs/api.md, "Host memory")
 *
 * Transfers copy through staging memory on discrete GPUs: the host copies the bytes into (or out
 * of) a mapped ring while the GPU's DMA moves the ring. Registered and pinned memory skip that
 * copy: the GPU reads and writes those pages directly, at the bus's speed, when the whole host
 * range of a cubec_write, cubec_read or cubec_read_async lies within one registered range. A
 * cubec_write still returns only when the bytes have been taken, so the memory may be reused at
 * once as always; a cubec_read_async into such memory copies nothing at completion.
 * ------------------------------------------------------------------------------------------- */

/* Registers [ptr, +size) of the program's memory (both multiples of
 * cubec_device_info.host_register_alignment; not overlapping another registered or pinned range).
 * Where the device cannot import host memory (no VK_EXT_external_memory_host) the range is
 * accepted and transfers through it go through staging (a warning says so once). The memory
 * must stay allocated until cubec_host_unregister. */
CUBEC_MUST_USE cubec_status cubec_host_register(cubec_device *device, void *ptr, uint64_t size);
/* Unregisters the range that starts at `ptr`, after the transfers that use it have finished:
 * like cudaHostUnregister it waits for them, and a cubec_read_async still to land in the range
 * copies its bytes in before the call returns (its event then reports done). */
CUBEC_MUST_USE cubec_status cubec_host_unregister(cubec_device *device, void *ptr);
/* Allocates `size` bytes of pinned host memory (host-visible, coherent, cached where the device
 * has such memory), registered for fast transfers on this device. Freed with cubec_host_free or
 * when the device closes. */
CUBEC_MUST_USE cubec_status cubec_host_alloc(cubec_device *device, uint64_t size, void **out_ptr);
/* Frees memory from cubec_host_alloc, after the transfers that use it have finished: like
 * cudaFreeHost it waits for them, and a cubec_read_async still to land in the memory copies its
 * bytes in before it is freed (its event then reports done). */
CUBEC_MUST_USE cubec_status cubec_host_free(cubec_device *device, void *ptr);

typedef struct cubec_event_s cubec_event;
/* Starts a read; the bytes land in `dst` when cubec_event_wait returns success. `dst` must stay
 * valid until then. The source buffer is kept alive by the event. */
CUBEC_MUST_USE cubec_status cubec_read_async(cubec_device *device, cubec_stream stream,
                                             cubec_buffer src, uint64_t offset, void *dst,
                                             uint64_t size, cubec_event **out_event);
/* Blocks until the event's work is done and returns its outcome. */
CUBEC_MUST_USE cubec_status cubec_event_wait(cubec_event *event);
/* NULL when done (and successful), CUBEC_NOT_READY while pending, or the failure. */
CUBEC_MUST_USE cubec_status cubec_event_query(cubec_event *event);
/* Frees an event, waiting for its work first if needed. NULL is accepted. */
void cubec_event_free(cubec_event *event);

/* Device-to-device copy of `size` bytes (run as a compute kernel: faster than the copy engine).
 * Source and destination ranges must not overlap when they are the same memory. */
CUBEC_MUST_USE cubec_status cubec_copy(cubec_device *device, cubec_stream stream, cubec_buffer src,
                                       uint64_t src_offset, cubec_buffer dst, uint64_t dst_offset,
                                       uint64_t size);
/* Fills `size` bytes (a multiple of 4) with a repeated 32-bit pattern. */
CUBEC_MUST_USE cubec_status cubec_fill(cubec_device *device, cubec_stream stream, cubec_buffer dst,
                                       uint64_t offset, uint64_t size, uint32_t pattern);

/* ---------------------------------------------------------------------------------------------
 * Several devices (docs/multi-device-paths.md)
 *
 * Each open device has its own server: streams, pools, submission thread; a handle of one device
 * given to another is refused, naming the argument. Between two devices, cubec_copy_peer copies
 * bytes along the path cubec_device_get_path names for the ordered pair: `same-device` (the one
 * device: cubec_copy), `host-staged` (through host memory both devices import, in chunks of
 * [multi] chunk_bytes, two in flight) or `cuda-interop` (CUDA copies on the GPU between buffers
 * made by cubec_buffer_create_exportable, ordered through the devices' timelines; other buffers of
 * such a pair go host-staged). The configuration's [multi] path overrides the choice.
 * ------------------------------------------------------------------------------------------- */

/* How cubec moves bytes from one device to another. */
typedef enum cubec_path {
    CUBEC_PATH_NONE = 0,         /* no path: cubec_path_info.reason says why */
    CUBEC_PATH_SAME_DEVICE = 1,  /* both are one device: cubec_copy */
    CUBEC_PATH_HOST_STAGED = 2,  /* through host memory both devices import */
    CUBEC_PATH_CUDA_INTEROP = 3, /* CUDA copies memory both devices map into it */
} cubec_path;

/* What joins two devices. */
typedef enum cubec_link_class {
    CUBEC_LINK_NONE = 0,
    CUBEC_LINK_SAME_DEVICE = 1,          /* one device */
    CUBEC_LINK_SAME_PHYSICAL_DEVICE = 2, /* two opens of one physical device (device_uuid equal) */
    CUBEC_LINK_PCIE = 3,                 /* two discrete GPUs: through the host's PCIe */
    CUBEC_LINK_HOST = 4,                 /* through host memory (CPU or integrated devices) */
} cubec_link_class;

/* The path of an ordered pair of devices (start it with CUBEC_PATH_INFO_INIT). */
typedef struct cubec_path_info {
    uint32_t struct_size;  /* CUBEC_PATH_INFO_INIT */
    cubec_path path;       /* what cubec_copy_peer uses from the first device to the second */
    cubec_link_class link; /* what joins the two devices */
    /* GB/s (1e9 bytes a second) of a cubec_copy_peer measured on this pair by
     * cubec_device_measure_path (the last measurement; 0: not measured yet). */
    double bandwidth_gbs;
    /* Why the path is CUBEC_PATH_NONE, or else why the faster paths were passed over (e.g.
     * "cuda-interop: not available: libcuda absent") or what the path leaves to another. */
    char reason[256];
} cubec_path_info;
/* A cubec_path_info with its struct_size set: start every one with it ("Structs that grow"). */
#define CUBEC_PATH_INFO_INIT                                                                       \
    {                                                                                              \
        .struct_size = sizeof(cubec_path_info)                                                     \
    }

/* "same-device", "host-staged", "cuda-interop", "none"; "unknown" for a value that is not one. */
const char *cubec_path_name(cubec_path path);
/* "same-device", "same-physical-device", "pcie", "host", "none"; "unknown" otherwise. */
const char *cubec_link_class_name(cubec_link_class link);
/* The path from `src` to `dst` (they may be the same device) and the last bandwidth measured on
 * it. Does not measure and queues no work. */
CUBEC_MUST_USE cubec_status cubec_device_get_path(cubec_device *src, cubec_device *dst,
                                                  cubec_path_info *out_info);
/* cubec_device_get_path after measuring the path: a copy of `bytes` bytes (0: 4 MiB; a multiple
 * of 4) from a buffer of `src` to one of `dst` on new streams, once to warm up and once timed.
 * Blocks for the copies; the buffers are released before it returns. */
CUBEC_MUST_USE cubec_status cubec_device_measure_path(cubec_device *src, cubec_device *dst,
                                                      uint64_t bytes, cubec_path_info *out_info);
/* Copies `size` bytes of `src` (a buffer of src_device) from src_offset to dst_offset of `dst`
 * (a buffer of dst_device); offsets and size are multiples of 4. Ordered after the work queued on
 * src_stream that writes the source (as a cubec_copy on that stream is) and before the work
 * queued later on dst_stream; it does not wait for either device: each chunk's copy on the
 * destination waits, on that device's submission thread, for its copy on the source. Bytes of the
 * source that carry a failure land on the destination as a failure (docs/errors.md). On one
 * device (src_device == dst_device, the path `same-device`) it is cubec_copy on dst_stream. */
CUBEC_MUST_USE cubec_status cubec_copy_peer(cubec_device *src_device, cubec_stream src_stream,
                                            cubec_buffer src, uint64_t src_offset,
                                            cubec_device *dst_device, cubec_stream dst_stream,
                                            cubec_buffer dst, uint64_t dst_offset, uint64_t size);

/* Collectives within a process (docs/multi-device-paths.md, "Collectives"): a communicator over
 * open devices whose ranks are the devices in the order given (rank r is devices[r]; sort them by
 * cubec_device_peek index first where that order matters). Element types and operations carry
 * the values of cubec_mpi's (cubec_mpi.h), whose argument rules and shard rule they follow.
 *
 * Every collective takes one entry per rank in each array: buffers (or in / out) [r] is a buffer
 * of rank r's device and streams[r] a stream of that device. A collective is ordered after the
 * work queued on each rank's stream (and any stream's writers of its buffers, as cubec_copy_peer
 * is) and before the work queued later on it; the caller never waits for a device. A failure
 * carried by a rank's input reaches every output range computed from it (docs/errors.md). Every
 * argument of every rank is checked before any work is queued; a refused one is named with its
 * value and changes nothing. f16 data moves in 4-byte words: a buffer of f16 elements holds the
 * words that cover them (count * 2 bytes rounded up to a multiple of 4). */
typedef struct cubec_comm_s cubec_comm;

/* Element types of a collective (CUBEC_MPI_F32, _F16 and _I32's values). f16 is IEEE binary16,
 * reduced in f32: each reduction step widens both operands, reduces and rounds once. */
typedef enum cubec_dtype {
    CUBEC_DTYPE_F32 = 1,
    CUBEC_DTYPE_F16 = 2,
    CUBEC_DTYPE_I32 = 3,
} cubec_dtype;

/* Element-wise operations of a reduction (CUBEC_MPI_SUM and CUBEC_MPI_MAX's values). */
typedef enum cubec_reduce_op {
    CUBEC_REDUCE_SUM = 1,
    CUBEC_REDUCE_MAX = 2,
} cubec_reduce_op;

/* What a communicator is (cubec_comm_get_info; start it with CUBEC_COMM_INFO_INIT). */
typedef struct cubec_comm_info {
    uint32_t struct_size; /* CUBEC_COMM_INFO_INIT */
    uint32_t n;           /* ranks */
    /* The transport chosen at creation: "nccl" (NCCL over CUDA, where libnccl and libcuda load,
     * the communicator has 2 ranks or more and every device is a GPU of its own) or "ring"
     * (copies between neighbours over cubec_copy_peer). Through "nccl", a collective whose
     * buffers are not all exportable (cubec_buffer_create_exportable) runs on the ring. */
    char transport[32];
    /* Why the transports tried before the chosen one did not serve these devices (each
     * "name: reason", separated by "; "), cut to fit; empty when the first was taken. Since
     * 0.2.13. */
    char transport_reason[256];
} cubec_comm_info;
/* A cubec_comm_info with its struct_size set: start every one with it ("Structs that grow"). */
#define CUBEC_COMM_INFO_INIT                                                                       \
    {                                                                                              \
        .struct_size = sizeof(cubec_comm_info)                                                     \
    }

/* A communicator over `n` (>= 1) open devices, each given once. The devices must stay open until
 * cubec_comm_destroy. It compiles nothing yet: a device's kernels of a dtype are compiled at
 * their first use and kept. */
CUBEC_MUST_USE cubec_status cubec_comm_create(cubec_device *const *devices, uint32_t n,
                                              cubec_comm **out_comm);
/* Frees the communicator and its kernels; collectives already queued still run. NULL is
 * accepted. */
void cubec_comm_destroy(cubec_comm *comm);
/* The communicator's ranks and transport, written as far as out_info->struct_size declares. */
CUBEC_MUST_USE cubec_status cubec_comm_get_info(const cubec_comm *comm, cubec_comm_info *out_info);
/* How `total` elements are split over the ranks by cubec_comm_all_gather and
 * cubec_comm_reduce_scatter (cubec_mpi_shard's rule): rank r holds total / n elements, one more
 * when r < total % n, starting at *out_offset (elements). A rank may hold none (total < n). */
CUBEC_MUST_USE cubec_status cubec_comm_shard(const cubec_comm *comm, uint64_t total, uint32_t rank,
                                             uint64_t *out_offset, uint64_t *out_count);
/* In place on every rank r, for i < count: buffers[r][i] = op over the ranks of buffers[r][i]
 * (each holding at least count elements). Every element is reduced once, on one rank, in a fixed
 * order, and its bits copied to the others: every rank gets the same bits. count 0 does
 * nothing. */
CUBEC_MUST_USE cubec_status cubec_comm_all_reduce(cubec_comm *comm, const cubec_buffer *buffers,
                                                  const cubec_stream *streams, uint64_t count,
                                                  cubec_dtype dtype, cubec_reduce_op op);
/* The first count elements of buffers[root] are copied into buffers[r] of every other rank. */
CUBEC_MUST_USE cubec_status cubec_comm_broadcast(cubec_comm *comm, const cubec_buffer *buffers,
                                                 const cubec_stream *streams, uint64_t count,
                                                 cubec_dtype dtype, uint32_t root);
/* Every rank's shard of `total` elements (cubec_comm_shard: in[r] holds rank r's, from its first
 * element) is gathered into out[q] of every rank q at its offset: out[q] holds total elements.
 * in[r] and out[r] are two buffers. */
CUBEC_MUST_USE cubec_status cubec_comm_all_gather(cubec_comm *comm, const cubec_buffer *in,
                                                  const cubec_buffer *out,
                                                  const cubec_stream *streams, uint64_t total,
                                                  cubec_dtype dtype);
/* The element-wise op over the ranks of in[r] (total elements on every rank), of which rank r
 * receives its shard (cubec_comm_shard) in out[r], from its first element. in[r] is only read;
 * in[r] and out[r] are two buffers. */
CUBEC_MUST_USE cubec_status cubec_comm_reduce_scatter(cubec_comm *comm, const cubec_buffer *in,
                                                      const cubec_buffer *out,
                                                      const cubec_stream *streams, uint64_t total,
                                                      cubec_dtype dtype, cubec_reduce_op op);

/* ---------------------------------------------------------------------------------------------
 * Kernels
 *
 * A kernel is a GLSL compute shader (compiled at run time) or SPIR-V words. A launch's buffers
 * fill its layout as written: buffer i is set 0 binding i, further sets follow the highest
 * binding of the set before; gaps take a buffer that is not bound, and uniform blocks take
 * theirs like storage blocks (docs/kernels.md, "Bringing existing shaders"). Each binding's access
 * (readonly / writeonly / read-write) is taken from the SPIR-V and drives hazard tracking.
 *
 * Metadata ("info": sizes, scalars) is declared in GLSL with the CUBEC_INFO macro, which cubec
 * defines before the source:
 *     CUBEC_INFO(uint n; float alpha;)   // members, no commas; the block is named `info`
 * It becomes a push-constant block when it fits the device's maxPushConstantsSize, otherwise a
 * read-only storage buffer at binding CUBEC_INFO_BINDING (31); on discrete GPUs that map device
 * memory for the host (the default `[kernel] metadata = auto`) a std430 uniform buffer at that
 * binding. The launch passes its bytes the same way (std430 offsets) in every case. SPIR-V
 * kernels may declare a push-constant block directly.
 * ------------------------------------------------------------------------------------------- */

/* Limits of cubec itself on kernels, checked by cubec_kernel_create (docs/errors.md, "Shader
 * input"): the bytes of a GLSL source (its strlen) or of a SPIR-V module (spirv_words * 4), by
 * default (the configuration's [kernel] max_source_bytes / CUBEC_MAX_SOURCE_BYTES sets it per
 * device), and the bytes of a metadata block (the kernel's info_size: the chunk of the ring that
 * carries metadata too large for push constants). */
#define CUBEC_KERNEL_MAX_SOURCE_BYTES 4194304u /* 4 MiB */
#define CUBEC_KERNEL_MAX_INFO_BYTES 524288u    /* 512 KiB */

typedef struct cubec_kernel {
    uint64_t id;
} cubec_kernel;

/* Array elements (defines, spec constants, tune candidates, pool reports, matrix shapes) carry
 * no size and never grow: the array's stride is fixed by the header (docs/api.md). */
typedef struct cubec_define {
    const char *name;
    const char *value; /* NULL: defined with no value */
} cubec_define;

/* A specialization constant of the kernel (`layout(constant_id = ID) const T NAME = default;` in
 * GLSL): the 32-bit value (bits of a uint, int, float or bool) that replaces its default when the
 * pipeline is created. Each set of values is a kernel of its own (its identity includes them). */
typedef struct cubec_spec_constant {
    uint32_t id;
    uint32_t value;
} cubec_spec_constant;

/* The most specialization constants a kernel description may give. */
#define CUBEC_MAX_SPEC_CONSTANTS 64

typedef struct cubec_kernel_desc {
    uint32_t struct_size;  /* CUBEC_KERNEL_DESC_INIT */
    const char *name;      /* for logs and errors; default "kernel"              */
    const char *glsl;      /* GLSL compute source, or NULL                         */
    const uint32_t *spirv; /* SPIR-V words, or NULL (one of glsl / spirv / wgsl) */
    size_t spirv_words;
    const cubec_define *defines;
    uint32_t define_count;
    const char *entry_point; /* default "main"                                      */
    int optimize;            /* non-zero: shaderc -O                                */
    /* Values for the module's 32-bit specialization constants; ids it does not declare and
     * 64-bit constants are refused. A workgroup size (local_size_x_id ...) and shared arrays that
     * they set take these values, and the limits are checked on them (docs/kernels.md). */
    const cubec_spec_constant *spec_constants;
    uint32_t spec_constant_count;
    /* The subgroup size the kernel runs with (gl_SubgroupSize), or 0: the driver's choice. A
     * power of two in [min_subgroup_size, max_subgroup_size] of cubec_device_info, given to the
     * pipeline as VkPipelineShaderStageRequiredSubgroupSizeCreateInfo; it needs the device
     * feature subgroup_size_control, except for a device's only size (min == max). Partial
     * subgroups stay allowed: the workgroup size need not be a multiple of it. Part of the
     * kernel's identity. */
    uint32_t required_subgroup_size;
    /* GLSL as projects keep it (docs/kernels.md, "Bringing existing shaders"); added last.
     * `#include "x"` is looked up next to the including file (for the kernel's own source, next
     * to glsl_path), then in include_dirs in order; `#include <x>` in include_dirs only. The
     * files are read when the kernel is created, and their bytes are part of its identity (an
     * edited include is compiled again). An include not found fails with CUBEC_COMPILE_FAILED
     * naming the file, the including file and line, and the directories searched. */
    const char *glsl_path; /* the file `glsl` was read from (NULL: none); messages name it */
    const char *const *include_dirs; /* directories `#include` searches, in order, or NULL */
    uint32_t include_dir_count;      /* entries of include_dirs                        */
    /* Text inserted right after the source's `#version` line (e.g. `#extension ... : require`
     * lines), or NULL; messages keep the source's own line numbers. Part of the identity. */
    const char *preamble;
    /* WGSL compute source, or NULL: exactly one of glsl, spirv and wgsl is set (added in 0.2.11,
     * last). Only the webgpu backend takes it (elsewhere CUBEC_UNSUPPORTED); docs/kernels.md
     * "WGSL kernels" says what it may declare: storage and uniform buffers of bind group 0 at
     * bindings 0..31 (buffer i of a launch at binding i), at most one var<immediate> struct
     * that takes the launch's info bytes, and a workgroup size of integer literals. Defines,
     * glsl_path, include_dirs and preamble are GLSL's and refused with it. */
    const char *wgsl;
} cubec_kernel_desc;
/* A cubec_kernel_desc with its struct_size set: start every one with it ("Structs that grow"). */
#define CUBEC_KERNEL_DESC_INIT                                                                     \
    {                                                                                              \
        .struct_size = sizeof(cubec_kernel_desc)                                                   \
    }

typedef enum cubec_access {
    CUBEC_ACCESS_READ = 1,
    CUBEC_ACCESS_WRITE = 2,
    CUBEC_ACCESS_READ_WRITE = 3,
} cubec_access;

typedef struct cubec_kernel_info {
    uint32_t struct_size;       /* CUBEC_KERNEL_INFO_INIT */
    uint64_t hash;              /* kernel identity: hash of what defines it            */
    uint32_t binding_count;     /* buffers a launch passes at least (gaps included)   */
    cubec_access access[32];    /* per binding                                        */
    uint32_t info_size;         /* bytes of metadata a launch passes (0 = none)       */
    int info_in_push_constants; /* 1: push constants; 0: storage buffer (or no info) */
    uint32_t workgroup_size[3];
    /* The members of the metadata block (CUBEC_INFO) that cubec_kernel_get_info_field lists: one
     * per member, a struct member's own members in its place (docs/kernels.md, "Filling the block
     * by name"). Added last (docs/api.md, "Struct growth"). */
    uint32_t info_field_count;
    /* Bytes of shared (Workgroup) memory the kernel declares, as the driver counts them: with the
     * values of its specialization constants, as workgroup_size is (docs/kernels.md,
     * "Specialization constants"). Added last (docs/api.md, "Struct growth"). */
    uint64_t shared_memory_size;
} cubec_kernel_info;
/* A cubec_kernel_info with its struct_size set: start every one with it ("Structs that grow"). */
#define CUBEC_KERNEL_INFO_INIT                                                                     \
    {                                                                                              \
        .struct_size = sizeof(cubec_kernel_info)                                                   \
    }

/* The element type of a metadata member. */
typedef enum cubec_info_type {
    CUBEC_INFO_OTHER = 0, /* a type this header does not name */
    CUBEC_INFO_BOOL = 1,  /* 4 bytes in a block, 0 or 1 */
    CUBEC_INFO_INT8 = 2,
    CUBEC_INFO_UINT8 = 3,
    CUBEC_INFO_INT16 = 4,
    CUBEC_INFO_UINT16 = 5,
    CUBEC_INFO_FLOAT16 = 6,
    CUBEC_INFO_INT32 = 7,
    CUBEC_INFO_UINT32 = 8,
    CUBEC_INFO_FLOAT32 = 9,
    CUBEC_INFO_INT64 = 10,
    CUBEC_INFO_UINT64 = 11,
    CUBEC_INFO_FLOAT64 = 12,
    CUBEC_INFO_STRUCT = 13,  /* an array of structs: its members are not listed */
    CUBEC_INFO_ADDRESS = 14, /* a GL_EXT_buffer_reference: 8 bytes, a device address
                                (cubec_raw_buffer.device_address) */
} cubec_info_type;

/* One member of a kernel's metadata block, with the std430 layout the launch's info bytes
 * follow: the member's bytes are at `offset` in cubec_launch_desc.info. */
typedef struct cubec_info_field {
    uint32_t struct_size; /* CUBEC_INFO_FIELD_INIT */
    /* The member's name in the source ("scale"); a member of a struct member is "outer.inner".
     * Owned by the device: valid until it closes (a binding copies it at once). */
    const char *name;
    uint32_t offset;        /* bytes from the start of the block                             */
    uint32_t size;          /* bytes it spans: array_length x array_stride for an array      */
    cubec_info_type type;   /* the scalar type of the member or of its components       */
    uint32_t vector_size;   /* components: 1 for a scalar, 2..4 for vecN (a matrix's rows) */
    uint32_t columns;       /* 1, or a matrix's columns                                   */
    uint32_t array_length;  /* 0: not an array; else its elements, all dimensions together */
    uint32_t array_stride;  /* bytes from one element to the next (0: not an array)       */
    uint32_t matrix_stride; /* bytes from one column to the next (0: not a matrix)       */
} cubec_info_field;
/* A cubec_info_field with its struct_size set: start every one with it ("Structs that grow"). */
#define CUBEC_INFO_FIELD_INIT                                                                      \
    {                                                                                              \
        .struct_size = sizeof(cubec_info_field)                                                    \
    }

/* Compiles the GLSL (or validates the SPIR-V for the Vulkan version cubec uses on the device),
 * reflects its interface and creates its pipeline. Before any Vulkan object is made, it refuses
 * a source over [kernel] max_source_bytes (CUBEC_INVALID_ARGUMENT), GLSL that does not compile
 * or whose entry_point names no function (CUBEC_COMPILE_FAILED), SPIR-V the validator refuses or
 * without a GLCompute entry point of that name (CUBEC_INVALID_SPIRV), and a kernel past the
 * device's workgroup, shared-memory or push-constant limits, a metadata block over
 * CUBEC_KERNEL_MAX_INFO_BYTES, or a capability the device has not enabled (CUBEC_UNSUPPORTED);
 * each message names the kernel and the value (docs/errors.md, "Shader input"). A
 * required_subgroup_size that is not a power of two or lies outside the device's range is
 * CUBEC_INVALID_ARGUMENT; one other than the device's only size without subgroup_size_control
 * is CUBEC_UNSUPPORTED (both before anything is compiled), as is a workgroup of more
 * invocations than the size times the device's maxComputeWorkgroupSubgroups.
 * The compilation runs without the device lock: other threads' calls on the device go on
 * meanwhile, and threads creating the same kernel at once share one compilation. */
CUBEC_MUST_USE cubec_status cubec_kernel_create(cubec_device *device, const cubec_kernel_desc *desc,
                                                cubec_kernel *out_kernel);
CUBEC_MUST_USE cubec_status cubec_kernel_get_info(cubec_device *device, cubec_kernel kernel,
                                                  cubec_kernel_info *out_info);
/* The metadata block's member `index` (0 .. cubec_kernel_info.info_field_count - 1), in the
 * order of their offsets. An index past the count is CUBEC_INVALID_ARGUMENT naming both. A kernel
 * still compiling is waited for, as by cubec_kernel_get_info. */
CUBEC_MUST_USE cubec_status cubec_kernel_get_info_field(cubec_device *device, cubec_kernel kernel,
                                                        uint32_t index,
                                                        cubec_info_field *out_field);
/* The metadata block's member called `name` (as cubec_info_field.name spells it). A name the
 * block does not have is CUBEC_INVALID_ARGUMENT, listing the names it has. */
CUBEC_MUST_USE cubec_status cubec_kernel_find_info_field(cubec_device *device, cubec_kernel kernel,
                                                         const char *name,
                                                         cubec_info_field *out_field);
/* Destroys a kernel; launches already queued still run. A zero handle is accepted. A kernel
 * still compiling in the queue finishes compiling (another handle may share it). */
CUBEC_MUST_USE cubec_status cubec_kernel_destroy(cubec_device *device, cubec_kernel kernel);

/* The compile queue (docs/kernels.md, "The compile queue").
 *
 * cubec_kernel_queue checks `desc` as cubec_kernel_create does and returns a handle at once; the
 * kernel is compiled by the device's compile workers ([compile] parallelism threads, started on
 * first use), without the device lock and in parallel with each other. Queuing a kernel already
 * compiled gives a ready handle; queuing one already queued shares its compilation. A launch,
 * cubec_kernel_get_info or cubec_kernel_wait of a kernel still compiling waits for that kernel
 * alone: one no worker has taken yet is compiled on the calling thread. A kernel that failed to
 * compile keeps its error: cubec_kernel_wait and cubec_kernel_get_info return it, and a launch
 * puts it on the launch's declared outputs (cubec_launch_desc.declared_outputs), or returns it
 * when the launch declares none. With `[compile] async_create = on` cubec_kernel_create queues
 * too. */
CUBEC_MUST_USE cubec_status cubec_kernel_queue(cubec_device *device, const cubec_kernel_desc *desc,
                                               cubec_kernel *out_kernel);
/* Waits for the kernel's compilation; NULL when it is ready, else its compile error. */
CUBEC_MUST_USE cubec_status cubec_kernel_wait(cubec_device *device, cubec_kernel kernel);
/* Waits for every kernel queued before the call (the calling thread compiles what no worker has
 * taken yet). NULL when all compiled; else the error of the first that did not, with how many
 * did not: a kernel whose compilation failed before the call counts too, for as long as its
 * handle lives. The errors stay with their kernels. */
CUBEC_MUST_USE cubec_status cubec_kernel_compile_queued(cubec_device *device);

/* ---------------------------------------------------------------------------------------------
 * Launches
 * ------------------------------------------------------------------------------------------- */

typedef struct cubec_launch_desc {
    uint32_t struct_size; /* CUBEC_LAUNCH_DESC_INIT */
    cubec_kernel kernel;
    const cubec_buffer *buffers; /* one per binding, in binding order (docs/kernels.md) */
    uint32_t buffer_count;
    const void *info; /* metadata bytes, exactly the kernel's info_size */
    uint32_t info_size;
    /* Workgroup counts. A count with a zero dimension launches nothing (and succeeds). */
    uint32_t groups[3];
    /* If `indirect.id` is non-zero the counts are three uint32 read from this buffer at
     * `indirect_offset` (a multiple of 4) when the launch runs: `groups` is ignored. */
    cubec_buffer indirect;
    uint64_t indirect_offset;
    /* Bit i declares that the launch writes buffers[i]. Read only when the kernel failed to
     * compile in the queue (cubec_kernel_queue): those buffers then carry the compile error, and
     * no other buffer is touched; with none declared the launch returns the error. */
    uint32_t declared_outputs;
    /* Buffers the kernel reaches through device addresses (GL_EXT_buffer_reference, the address
     * from cubec_buffer_raw) instead of a binding. Declared here, they are ordered, held, tainted
     * and captured into graphs as bound buffers are: a cubec_read waits for the launch that
     * writes one, the launch is skipped when one it reads carries a failure, and one it writes
     * carries the launch's failure (or its compile error, as declared_outputs do). They are not
     * bound. Bit i of address_reads / address_writes: the launch reads / writes
     * address_buffers[i]; each buffer needs at least one. buffer_count plus address_buffer_count
     * is at most 32. A buffer reached by address and not declared is the program's to order
     * (cubec_sync). */
    const cubec_buffer *address_buffers;
    uint32_t address_buffer_count; /* entries of address_buffers */
    uint32_t address_reads;        /* bit i: the launch reads address_buffers[i] */
    uint32_t address_writes;       /* bit i: the launch writes address_buffers[i] */
    /* The images, texel buffers and samplers the kernel declares, each naming its set and
     * binding (cubec_resource); every such binding of the kernel must be given once. Buffers,
     * buffers reached by address, images and texel buffers together are at most 32. */
    const cubec_resource *resources;
    uint32_t resource_count; /* resources[0 .. count-1] */
} cubec_launch_desc;
/* A cubec_launch_desc with its struct_size set: start every one with it ("Structs that grow"). */
#define CUBEC_LAUNCH_DESC_INIT                                                                     \
    {                                                                                              \
        .struct_size = sizeof(cubec_launch_desc)                                                   \
    }

/* Queues a launch on the stream. Never blocks on the GPU; allocates nothing when warm. */
CUBEC_MUST_USE cubec_status cubec_launch(cubec_device *device, cubec_stream stream,
                                         const cubec_launch_desc *desc);
/* Submits the stream's recorded work to the GPU without waiting. */
CUBEC_MUST_USE cubec_status cubec_flush(cubec_device *device, cubec_stream stream);
/* Submits and waits for all work on the stream. */
CUBEC_MUST_USE cubec_status cubec_sync(cubec_device *device, cubec_stream stream);

/* ---------------------------------------------------------------------------------------------
 * Failures on memory (docs/errors.md)
 *
 * An error that arises after a call returned (recording or submitting queued work, a lost
 * device) is attached to the bytes the work would have written. A launch whose input carries a
 * failure is skipped and its outputs take the failure, with the chain that led there. A read,
 * cubec_check or cubec_sync_check of such bytes returns the root cause and the chain; a successful
 * cubec_write of a range clears it.
 * ------------------------------------------------------------------------------------------- */

/* NULL when every byte of every buffer was written by the work queued for it (after submitting
 * what is queued for them); otherwise the failure of the first buffer that carries one. Does not
 * wait for the GPU. */
CUBEC_MUST_USE cubec_status cubec_check(cubec_device *device, const cubec_buffer *buffers,
                                        uint32_t count);
/* cubec_sync of the stream, then cubec_check of the buffers. */
CUBEC_MUST_USE cubec_status cubec_sync_check(cubec_device *device, cubec_stream stream,
                                             const cubec_buffer *buffers, uint32_t count);

/* Fails the `nth` next fallible call of `kind` (1 = the next one); 0 disarms. Also set by the
 * environment: CUBEC_FAULT=kind:n[,kind:n...] with the kinds' names (cubec_fault_kind_name). */
CUBEC_MUST_USE cubec_status cubec_fault_inject(cubec_device *device, cubec_fault_kind kind,
                                               uint64_t nth);
/* How many fallible calls of each kind the device made so far. */
CUBEC_MUST_USE cubec_status cubec_fault_get_counts(cubec_device *device,
                                                   uint64_t out_counts[CUBEC_FAULT_KIND_COUNT]);
/* The name of a kind as CUBEC_FAULT spells it, e.g. "page" for CUBEC_FAULT_PAGE; "unknown" for a
 * value that is not a kind. */
const char *cubec_fault_kind_name(cubec_fault_kind kind);

/* ---------------------------------------------------------------------------------------------
 * Graphs (docs/graphs.md)
 *
 * A graph is a sequence of launches captured once on a stream and replayed with one submission.
 * The launches are recorded, with their barriers, bindings and metadata, into a reusable Vulkan
 * command buffer: a replay costs one vkQueueSubmit whatever the number of launches.
 *
 *     cubec_graph_prepare(dev, s);     // drains the stream and isolates it
 *     ...run the work once (warm-up: kernels compiled, buffers allocated)...
 *     cubec_graph_begin(dev, s);       // reports a failure of the warm-up here
 *     ...the same launches: recorded, not run...
 *     cubec_graph_end(dev, s, &g);
 *     for (...) { cubec_write(inputs); cubec_graph_replay(dev, s, g); cubec_read(outputs); }
 *     cubec_graph_destroy(dev, s, g);
 *
 * Between begin and end, on the capturing stream: launches, copies and fills are recorded;
 * cubec_read, cubec_read_async, cubec_sync, cubec_sync_check, cubec_profile_begin and
 * cubec_graph_replay are refused with CUBEC_GRAPH_STATE naming the operation; cubec_memory_cleanup
 * is refused while any stream captures; a cubec_write is refused lazily: the call succeeds, the
 * bytes are not written and carry a CUBEC_GRAPH_STATE failure, and when the capturing stream itself
 * wrote, the capture is doomed. A buffer may be created during the window, also one that needs a
 * new page (spec 3.9's AddOnly: pages are added, and none moves while it records); a
 * creation the pools cannot serve fails as anywhere else and, made by the capturing stream, dooms
 * the capture (docs/memory.md). Any failure inside the window (that, a launch that fails or would
 * be skipped) makes cubec_graph_end fail naming the first one, and what the recorded launches would
 * have written carries it. A profile open on the stream (or on a stream sharing its slot) when the
 * capture begins is invalid (CUBEC_PROFILE_INVALID).
 *
 * The window is the capturing stream's alone. Every other stream, also one that shares its slot,
 * runs its work as usual meanwhile (as an unrelated CUDA stream does during a capture), and its
 * cubec_graph_end finds no capture of its own and changes nothing. Only cubec_graph_prepare and
 * cubec_graph_begin on a stream whose slot holds another stream's capture are refused
 * (CUBEC_GRAPH_STATE): a slot holds one capture at a time.
 *
 * A graph keeps the memory of every buffer it binds alive until it is destroyed; the buffers'
 * contents are read when a replay runs (write fresh inputs between replays; indirect counts are
 * read then too). A replay runs after the work queued before it on the stream and is a write:
 * if it fails, its outputs carry the failure until a later replay succeeds; if an input it reads
 * carries a failure, it is skipped and its outputs take the failure (like a launch).
 * ------------------------------------------------------------------------------------------- */

typedef struct cubec_graph {
    uint64_t id;
} cubec_graph;

/* Drains the stream and reserves its slot for a capture. Run the warm-up after it. */
CUBEC_MUST_USE cubec_status cubec_graph_prepare(cubec_device *device, cubec_stream stream);
/* Submits the warm-up (its failure is returned here, the preparation dropped: prepare again) and
 * starts recording the stream's launches. */
CUBEC_MUST_USE cubec_status cubec_graph_begin(cubec_device *device, cubec_stream stream);
/* Stops recording and returns the graph. Fails when the capture was doomed or belongs to
 * another stream; the stream is usable again either way. */
CUBEC_MUST_USE cubec_status cubec_graph_end(cubec_device *device, cubec_stream stream,
                                            cubec_graph *out_graph);
/* Submits the graph's launches once, after the work queued on `stream`. Does not wait. */
CUBEC_MUST_USE cubec_status cubec_graph_replay(cubec_device *device, cubec_stream stream,
                                               cubec_graph graph);
/* Waits for the graph's running replays, then frees it and what it holds. A destroyed or zero
 * graph is accepted (nothing happens); a handle of another device is refused (CUBEC_GRAPH_STATE
 * naming it). */
CUBEC_MUST_USE cubec_status cubec_graph_destroy(cubec_device *device, cubec_stream stream,
                                                cubec_graph graph);

/* ---------------------------------------------------------------------------------------------
 * Profiling (docs/profiling.md)
 *
 * A profile measures the GPU time of the work queued on one stream between cubec_profile_begin
 * and cubec_profile_end, from timestamps the GPU writes around that work (Device timing). Where
 * the queue writes no timestamps, or CUBEC_TIMING=system, it is host time around a sync of the
 * stream before and after (System timing); the result says which. Profiles nest and overlap
 * freely on one stream. A launch on the stream that fails or is skipped while a profile is open
 * makes cubec_profile_end return CUBEC_PROFILE_INVALID naming that failure: a measurement of work
 * that did not run is never returned as a time.
 * ------------------------------------------------------------------------------------------- */

typedef struct cubec_profile {
    uint64_t id;
} cubec_profile;

typedef enum cubec_timing {
    CUBEC_TIMING_DEVICE = 1, /* GPU timestamps written around the work                  */
    CUBEC_TIMING_SYSTEM = 2, /* host clock around a sync of the stream at begin and end */
} cubec_timing;

typedef struct cubec_profile_result {
    uint32_t struct_size; /* CUBEC_PROFILE_RESULT_INIT */
    uint64_t duration_ns;
    cubec_timing method;
    /* The two instants on the host's CLOCK_MONOTONIC time base (device timestamps converted). */
    uint64_t begin_ns, end_ns;
} cubec_profile_result;
/* A cubec_profile_result with its struct_size set: start every one with it ("Structs that grow").
 */
#define CUBEC_PROFILE_RESULT_INIT                                                                  \
    {                                                                                              \
        .struct_size = sizeof(cubec_profile_result)                                                \
    }

/* Starts a profile of the work queued on `stream` from now on. Does not wait for the GPU with
 * Device timing (System timing syncs the stream). */
CUBEC_MUST_USE cubec_status cubec_profile_begin(cubec_device *device, cubec_stream stream,
                                                cubec_profile *out_profile);
/* Ends it: submits the stream's work, waits for it, and returns the time between begin and end.
 * The token is consumed, also on error. `stream` must be the one the profile began on. */
CUBEC_MUST_USE cubec_status cubec_profile_end(cubec_device *device, cubec_stream stream,
                                              cubec_profile profile,
                                              cubec_profile_result *out_result);
/* Drops a profile without measuring, waiting or submitting anything. */
CUBEC_MUST_USE cubec_status cubec_profile_abandon(cubec_device *device, cubec_stream stream,
                                                  cubec_profile profile);
/* The method profiles of this device use. */
CUBEC_MUST_USE cubec_status cubec_profile_get_method(cubec_device *device,
                                                     cubec_timing *out_method);

/* ---------------------------------------------------------------------------------------------
 * Dry runs (docs/dry-runs.md)
 *
 * In a dry run, launches and graph replays are checked as usual (every argument error is
 * returned), their kernels are built and cached, and then they are dropped: nothing runs,
 * nothing is tainted, buffers keep their bytes, and a capture records none of them. Pages of
 * memory that buffer creation adds get device memory only at their first real use. Writes,
 * reads, copies and fills are not affected. A program dry-runs a first pass to warm its caches
 * and size its memory; a tuner opens a real window inside to measure.
 *
 * A stream's windows nest (at most 64 deep) and the innermost decides for that stream; a stream
 * with no window of its own follows the process-wide dry run, which covers every device.
 * ------------------------------------------------------------------------------------------- */

typedef enum cubec_run_mode {
    CUBEC_RUN_DRY = 1,  /* launches and replays are checked, then dropped */
    CUBEC_RUN_REAL = 2, /* launches run (opts a stream back in inside a dry run) */
} cubec_run_mode;

/* Opens a window of `mode` on `stream`; errors name a bad mode, a bad stream and a stack that is
 * already 64 deep. */
CUBEC_MUST_USE cubec_status cubec_run_window_begin(cubec_device *device, cubec_stream stream,
                                                   cubec_run_mode mode);
/* Closes the innermost window of `stream` (CUBEC_INVALID_ARGUMENT when it has none open). */
CUBEC_MUST_USE cubec_status cubec_run_window_end(cubec_device *device, cubec_stream stream);
/* The process-wide dry run: begins nest (a counter), each end closes one; an end with none open
 * is CUBEC_INVALID_ARGUMENT. Safe from any thread. */
CUBEC_MUST_USE cubec_status cubec_dry_run_begin(void);
CUBEC_MUST_USE cubec_status cubec_dry_run_end(void);

/* ---------------------------------------------------------------------------------------------
 * Autotuning (docs/autotune.md)
 *
 * A tuner picks, for a key (a shape, say "m=1024,n=1024,k=512"), the fastest of N candidates
 * that compute the same thing (a kernel's workgroup size, tile shape, algorithm). The choice is
 * looked up in the tuner's memory, then in the persistent cache on disk (the directory of the
 * kernel cache, [compile] cache_dir / CUBEC_CACHE_DIR, `none` = off; one namespace per cubec
 * build, device and driver and tuner name); on a miss each candidate is measured with profiles
 * (warm-up runs, then `samples` profiled runs each, round-robin) and the one with the lowest
 * median device time wins. A candidate whose run returns an error, or whose profile is poisoned
 * by a launch that failed or was skipped (CUBEC_PROFILE_INVALID), is rejected: it is never
 * chosen, and cubec_tune_outcome_get says why. The choice is remembered and stored; the caller
 * then runs the winner itself.
 *
 *     cubec_tune_candidate c[2] = {{"tile8", run_tile8, &args}, {"tile16", run_tile16, &args}};
 *     cubec_tune_request req = {.key = "1024x1024x512", .candidates = c, .candidate_count = 2};
 *     cubec_tune_result r;
 *     cubec_status st = cubec_tune_choose(tuner, stream, &req, &r);
 *     if (!st) st = c[r.index].run(dev, stream, &args);
 *
 * Measuring runs the candidates for real on `stream`: they must be safe to run repeatedly (each
 * run overwrites its outputs). A tuner is used by any thread (calls on one tuner take turns);
 * destroy it before its device is closed.
 * ------------------------------------------------------------------------------------------- */

typedef struct cubec_tuner_s cubec_tuner;

typedef struct cubec_tuner_desc {
    uint32_t struct_size; /* CUBEC_TUNER_DESC_INIT */
    /* Required: names the tuner in messages and its namespace on disk (choices of tuners of
     * other names never mix). At most CUBEC_TUNE_MAX_NAME_BYTES bytes. */
    const char *name;
    uint32_t warmup;  /* runs of each candidate before the samples, not counted; 0 = 2 */
    uint32_t samples; /* profiled runs of each candidate; 0 = 10; at most 1000         */
    int memory_only;  /* non-zero: no persistent cache (choices last as long as the tuner) */
} cubec_tuner_desc;
/* A cubec_tuner_desc with its struct_size set: start every one with it ("Structs that grow"). */
#define CUBEC_TUNER_DESC_INIT                                                                      \
    {                                                                                              \
        .struct_size = sizeof(cubec_tuner_desc)                                                    \
    }

#define CUBEC_TUNE_MAX_NAME_BYTES 256u
#define CUBEC_TUNE_MAX_KEY_BYTES 4096u
#define CUBEC_TUNE_MAX_CANDIDATES 256u
#define CUBEC_TUNE_MAX_SAMPLES 1000u

/* One way of doing the work. `run` queues one execution of it on `stream` (launches, copies,
 * fills; no read or sync is needed) and returns NULL, or an error, which rejects the candidate
 * (cubec takes the status over and frees it): another call's error, or one of its own from
 * cubec_status_new. Threads: it is called on the thread inside cubec_tune_choose, one candidate
 * at a time per tuner (the tuner's lock held, the device lock not held), so it may call any cubec
 * function on the device but must not call the same tuner. */
typedef struct cubec_tune_candidate {
    const char *name; /* required, unique among the request's candidates: stored with the choice */
    cubec_status (*run)(cubec_device *device, cubec_stream stream, void *user);
    void *user;
} cubec_tune_candidate;

typedef struct cubec_tune_request {
    uint32_t struct_size; /* CUBEC_TUNE_REQUEST_INIT */
    const char *key;      /* required, non-empty, at most CUBEC_TUNE_MAX_KEY_BYTES bytes */
    const cubec_tune_candidate *candidates;
    uint32_t candidate_count; /* 1..CUBEC_TUNE_MAX_CANDIDATES; one is chosen unmeasured */
    /* Non-zero: a value of the caller's (a hash of the candidates' sources, say) stored with the
     * choice; a stored choice with another checksum is measured again. */
    uint64_t checksum;
} cubec_tune_request;
/* A cubec_tune_request with its struct_size set: start every one with it ("Structs that grow"). */
#define CUBEC_TUNE_REQUEST_INIT                                                                    \
    {                                                                                              \
        .struct_size = sizeof(cubec_tune_request)                                                  \
    }

typedef enum cubec_tune_source {
    CUBEC_TUNE_MEASURED = 1, /* the candidates were measured by this call                  */
    CUBEC_TUNE_MEMORY = 2,   /* this tuner chose it before                                 */
    CUBEC_TUNE_DISK = 3,     /* read from the persistent cache (an earlier process)        */
    CUBEC_TUNE_SINGLE = 4,   /* the only candidate: chosen without running it              */
} cubec_tune_source;

typedef struct cubec_tune_result {
    uint32_t struct_size; /* CUBEC_TUNE_RESULT_INIT */
    uint32_t index;       /* the winner, an index into request->candidates */
    cubec_tune_source source;
    uint64_t median_ns; /* the winner's median device time when it was measured (0: SINGLE) */
} cubec_tune_result;
/* A cubec_tune_result with its struct_size set: start every one with it ("Structs that grow"). */
#define CUBEC_TUNE_RESULT_INIT                                                                     \
    {                                                                                              \
        .struct_size = sizeof(cubec_tune_result)                                                   \
    }

typedef enum cubec_tune_state {
    CUBEC_TUNE_NOT_RUN = 0,  /* the last call measured nothing (a cached choice), or not it */
    CUBEC_TUNE_TIMED = 1,    /* measured: see median_ns, min_ns                            */
    CUBEC_TUNE_REJECTED = 2, /* its run or its profile failed: see code and reason         */
} cubec_tune_state;

typedef struct cubec_tune_outcome {
    uint32_t struct_size; /* CUBEC_TUNE_OUTCOME_INIT */
    cubec_tune_state state;
    cubec_code code;            /* REJECTED: the failure's code                */
    uint64_t median_ns, min_ns; /* TIMED: over `samples` profiled runs         */
    uint32_t samples;
    char reason[512]; /* REJECTED: the failure's message (cut to fit) */
} cubec_tune_outcome;
/* A cubec_tune_outcome with its struct_size set: start every one with it ("Structs that grow"). */
#define CUBEC_TUNE_OUTCOME_INIT                                                                    \
    {                                                                                              \
        .struct_size = sizeof(cubec_tune_outcome)                                                  \
    }

/* Creates a tuner of `device`. Touches no file until a choice is looked up. */
CUBEC_MUST_USE cubec_status cubec_tuner_create(cubec_device *device, const cubec_tuner_desc *desc,
                                               cubec_tuner **out_tuner);
/* NULL is accepted. Choices already stored on disk stay there. A tuner in use is refused with
 * CUBEC_INVALID_ARGUMENT naming it, and kept: destroyed by one of its candidates while it measures,
 * or while another thread is inside cubec_tune_choose or cubec_tune_outcome_get of it. An idle
 * tuner is always destroyed (NULL). */
CUBEC_MUST_USE cubec_status cubec_tuner_destroy(cubec_tuner *tuner);
/* The index of the fastest candidate for request->key: remembered, stored or measured now (see
 * above). Fails with CUBEC_PROFILE_INVALID naming the tuner, the key and each candidate's reason
 * when every candidate is rejected; with the error of a lost device as it is; and with
 * CUBEC_INVALID_ARGUMENT naming the argument for bad input. */
CUBEC_MUST_USE cubec_status cubec_tune_choose(cubec_tuner *tuner, cubec_stream stream,
                                              const cubec_tune_request *request,
                                              cubec_tune_result *out_result);
/* What the tuner's last cubec_tune_choose (the last that passed its argument checks) found of
 * candidate `index`, in its request's order. */
CUBEC_MUST_USE cubec_status cubec_tune_outcome_get(cubec_tuner *tuner, uint32_t index,
                                                   cubec_tune_outcome *out_outcome);

/* ---------------------------------------------------------------------------------------------
 * Memory
 * ------------------------------------------------------------------------------------------- */

/* Allocation modes (docs/memory.md "Modes and windows"). A window, opened by
 * cubec_memory_window_begin and closed by cubec_memory_window_end, decides how the buffers that
 * `stream` creates while it is the innermost open window are allocated:
 *   AUTO        from the [memory] preset's pools (what happens with no window open);
 *   PERSISTENT  exact-fit slices of the persistent pool, reused only by buffers of the same
 *               size, kept through periodic cleanup and returned by cubec_memory_cleanup: for
 *               weights and other long-lived buffers ([memory] persistent_memory can ignore or
 *               enforce it);
 *   DEDICATED   one driver allocation per buffer, outside every pool, returned to the driver as
 *               soon as the GPU is done with the released buffer.
 * Windows nest (at most 64 deep) and belong to the stream's slot (streams that share a slot share
 * them); the innermost decides. A buffer keeps where it was allocated after its window closes. */
typedef enum cubec_memory_mode {
    CUBEC_MEMORY_MODE_AUTO = 0,
    CUBEC_MEMORY_MODE_PERSISTENT = 1,
    CUBEC_MEMORY_MODE_DEDICATED = 2,
} cubec_memory_mode;

/* One pool of a memory report. The buffer pools come first ("sliced", "exclusive", "arena", as
 * the [memory] preset lays them out, docs/memory.md); then the rings the runtime keeps for
 * itself: "metadata" (launch metadata that does not fit push constants) and, on discrete GPUs,
 * "upload" and "readback" (staging, created by the first transfer that stages). The totals of
 * cubec_memory_report cover the buffer pools only. */
typedef struct cubec_pool_report {
    char kind[16];      /* see above                                            */
    uint64_t page_size; /* sliced: the page size; exclusive: largest allocation */
    uint64_t max_slice_size;
    uint32_t pages;
    uint32_t pages_peak;
    uint64_t allocations;    /* live slices                                           */
    uint64_t bytes_in_use;   /* bytes of live slices, as requested                   */
    uint64_t bytes_padding;  /* alignment padding of live slices                     */
    uint64_t bytes_reserved; /* bytes of the pages held from the driver              */
    uint64_t cap;            /* sliced: the most bytes of pages it holds (0: no cap) */
    uint64_t dealloc_period; /* exclusive: reservations between sweeps of idle pages */
    /* arena: page_size is the current page size, max_slice_size the largest; these of its
     * pages are of sizes it grew past (returned to the driver as they empty) */
    uint32_t outdated_pages;
    /* sliced and arena: pages a guard holds in place (a graph, a raw resource, a transfer in
     * progress); they are never relocated (docs/memory.md, "Relocation and guards") */
    uint32_t guarded_pages;
    /* arena: live allocations moved off outdated pages so far, and their bytes */
    uint64_t relocations;
    uint64_t relocated_bytes;
} cubec_pool_report;

#define CUBEC_MAX_POOLS 32

typedef struct cubec_memory_report {
    uint32_t struct_size; /* CUBEC_MEMORY_REPORT_INIT */
    uint32_t pool_count;
    cubec_pool_report pools[CUBEC_MAX_POOLS];
    uint64_t bytes_in_use; /* sums over the pools */
    uint64_t bytes_reserved;
    uint64_t allocations;
    uint32_t pages;
    char preset[16]; /* the layout of the buffer pools: ladder, exclusive, custom, adaptive */
    /* Device-wide: pages made under a dry run that have no device memory yet (they get it at
     * their first real use). Counted in pages and bytes_reserved like any other page. */
    uint64_t pages_unbacked;
    /* Allocations outside the layout's pools (cubec_memory_window_begin): the persistent pool's
     * exact-fit slices (kind "persistent") and dedicated allocations (kind "dedicated"); both
     * count in the totals above. page_size is the largest slice or allocation held. */
    cubec_pool_report persistent;
    cubec_pool_report dedicated;
    /* The device's memory (every stream together, docs/memory.md "Budget"): what this process
     * may use of the heap buffers live in, as the driver estimates it (VK_EXT_memory_budget), or
     * that heap's size where the device lacks the extension, lowered to [memory] max_bytes
     * when that is set; and what is used of it: the driver's count where it has one, else the
     * bytes of the pages cubec holds. budget_source says which: "VK_EXT_memory_budget", "heap
     * size", "max_bytes" or "null heap". */
    uint64_t budget_bytes;
    uint64_t budget_used_bytes;
    char budget_source[24];
    /* Pages cubec has handed back that the driver is still freeing (large pages go back on a
     * thread of their own, docs/memory.md "Relocation and guards"): out of every pool and of
     * budget_used_bytes already, counted by the driver until freed; 0 once every free is done. */
    uint64_t budget_returning_bytes;
    /* The stream's slot's allocation windows, as cubec_memory_window_get gives them: the innermost
     * window's mode (AUTO when none is open) and how many are open. The window, not the routing
     * persistent_memory applies on top of it. */
    cubec_memory_mode window_mode;
    uint32_t window_depth;
    /* The device's [memory] persistent_memory setting: "enabled", "size-match", "disabled" or
     * "enforced" (docs/memory.md "Modes and windows"). */
    char persistent_memory[16];
} cubec_memory_report;
/* A cubec_memory_report with its struct_size set: start every one with it ("Structs that grow"). */
#define CUBEC_MEMORY_REPORT_INIT                                                                   \
    {                                                                                              \
        .struct_size = sizeof(cubec_memory_report)                                                 \
    }

CUBEC_MUST_USE cubec_status cubec_memory_report_get(cubec_device *device, cubec_stream stream,
                                                    cubec_memory_report *out_report);
/* Returns every page that holds no live allocation to the driver (waits for queued work that
 * still uses freed memory first). */
CUBEC_MUST_USE cubec_status cubec_memory_cleanup(cubec_device *device, cubec_stream stream);

/* Opens a window of `mode`. A value that is not a cubec_memory_mode, or a 65th open window, is
 * refused with CUBEC_INVALID_ARGUMENT naming it. */
CUBEC_MUST_USE cubec_status cubec_memory_window_begin(cubec_device *device, cubec_stream stream,
                                                      cubec_memory_mode mode);
/* Closes the innermost window; CUBEC_INVALID_ARGUMENT when none is open. */
CUBEC_MUST_USE cubec_status cubec_memory_window_end(cubec_device *device, cubec_stream stream);
/* The mode the innermost window sets (AUTO when none is open) and how many windows are open
 * (either out pointer may be NULL). This is the window, not the routing [memory]
 * persistent_memory may apply on top of it. */
CUBEC_MUST_USE cubec_status cubec_memory_window_get(cubec_device *device, cubec_stream stream,
                                                    cubec_memory_mode *out_mode,
                                                    uint32_t *out_depth);

/* The backend's object behind a buffer, for a program's own GPU code (cubec_buffer_raw). */
typedef struct cubec_raw_buffer {
    uint32_t struct_size; /* CUBEC_RAW_BUFFER_INIT */
    /* Vulkan: the VkBuffer (a non-dispatchable handle, as an integer) holding the buffer's bytes
     * among others'. Null backend: the host address of that memory. */
    uint64_t buffer;
    uint64_t offset; /* where the buffer's bytes start in it */
    uint64_t size;   /* the buffer's (or view's) size */
    /* Vulkan: vkGetBufferDeviceAddress of the VkBuffer plus offset, where the device has
     * bufferDeviceAddress (cubec enables it then), else 0. Null backend: the host address of
     * the bytes. */
    uint64_t device_address;
} cubec_raw_buffer;
/* A cubec_raw_buffer with its struct_size set: start every one with it ("Structs that grow"). */
#define CUBEC_RAW_BUFFER_INIT                                                                      \
    {                                                                                              \
        .struct_size = sizeof(cubec_raw_buffer)                                                    \
    }

/* Keeps an allocation alive and its memory in place (docs/memory.md "Relocation and guards"). */
typedef struct cubec_guard {
    uint64_t id;
} cubec_guard;

/* The raw resource of `buffer` (a view gives its own range), once every queued and running use of
 * its bytes on every stream has finished, and a guard: until cubec_guard_release, the bytes stay
 * where *out_raw says (relocation skips the page, and the allocation outlives the buffer's
 * handles). Work the program submits itself is not ordered with cubec's: call cubec_sync on the
 * streams that use the buffer before handing it back. Refused while `stream` records a graph. */
CUBEC_MUST_USE cubec_status cubec_buffer_raw(cubec_device *device, cubec_stream stream,
                                             cubec_buffer buffer, cubec_raw_buffer *out_raw,
                                             cubec_guard *out_guard);
/* Releases a guard; a zero or already released guard is ignored, a guard of another device is
 * refused (CUBEC_INVALID_ARGUMENT naming it). Releasing the guard of a
 * cubec_buffer_map unmaps: the pointer must not be used after it. */
CUBEC_MUST_USE cubec_status cubec_guard_release(cubec_device *device, cubec_guard guard);

/* The host address of `buffer`'s bytes (a view gives its own first byte) where its memory is
 * host-visible and coherent (docs/memory.md "Host mappings"): every CPU device (lavapipe, the null
 * backend) and integrated GPUs; a discrete GPU's device-local memory is refused with
 * CUBEC_UNSUPPORTED naming the buffer (read it with cubec_read). The call first waits for every
 * queued and running use of the bytes on every stream, as cubec_buffer_raw does, and makes what
 * the GPU wrote visible to the host, so *out_ptr holds the bytes as cubec_read would return them;
 * a range that carries a failure is refused with that failure (never the bytes of a failed
 * result). Until cubec_guard_release(*out_guard) the pointer stays valid: the allocation outlives
 * the buffer's handles and relocation leaves its page in place. While mapped, the program orders
 * its host accesses with the GPU's as with CUDA's managed memory: host writes are seen by work
 * enqueued after them; bytes that work enqueued after the map writes are to be read after
 * cubec_sync (or cubec_check) of its stream. Host writes clear no failure (a cubec_write does).
 * The device's close frees the memory: the pointer dies with the device, guard or not. A size-0
 * buffer maps to NULL. Refused while `stream` records a graph. */
CUBEC_MUST_USE cubec_status cubec_buffer_map(cubec_device *device, cubec_stream stream,
                                             cubec_buffer buffer, void **out_ptr,
                                             cubec_guard *out_guard);

/* The Vulkan objects of a device, for a program's own Vulkan code on cubec's memory (each handle
 * as an integer: cast it back to its Vulkan type). The program may create its own command pools,
 * pipelines and other objects on `device` and must destroy them before cubec_device_close; it
 * must not destroy or alter cubec's. docs/memory.md "Raw resources and the program's own Vulkan
 * code" shows the order of a round trip: cubec_buffer_raw (waits for cubec's uses and guards the
 * bytes), the program's submission to program_queue, a wait for its completion (a fence), then
 * cubec_guard_release; cubec's work on the buffer after that sees the program's writes. */
typedef struct cubec_vulkan_handles {
    uint32_t struct_size;     /* CUBEC_VULKAN_HANDLES_INIT */
    uint64_t instance;        /* VkInstance */
    uint64_t physical_device; /* VkPhysicalDevice */
    uint64_t device;          /* VkDevice */
    uint32_t api_version;     /* the Vulkan version the instance and device were created for */
    uint32_t queue_family;    /* the family cubec's buffers and queues belong to */
    /* A VkQueue of that family for the program's own submissions, never used by cubec (cubec
     * submits to queue 0 of the family, from its own threads); 0 where the family has a single
     * queue (lavapipe): cubec's queue is not handed out. */
    uint64_t program_queue;
    uint32_t program_queue_index; /* its index in the family (1), 0 without one */
} cubec_vulkan_handles;
/* A cubec_vulkan_handles with its struct_size set: start every one with it ("Structs that grow").
 */
#define CUBEC_VULKAN_HANDLES_INIT                                                                  \
    {                                                                                              \
        .struct_size = sizeof(cubec_vulkan_handles)                                                \
    }

/* The device's Vulkan objects into *out_handles; CUBEC_UNSUPPORTED on a backend without them (the
 * null backend). */
CUBEC_MUST_USE cubec_status cubec_device_get_vulkan_handles(cubec_device *device,
                                                            cubec_vulkan_handles *out_handles);

/* The whole device's memory as JSON: one entry per stream slot that has allocated memory (its
 * slot number, preset, window mode and depth, its pools with the fields of cubec_pool_report, and
 * the slot's totals), then the runtime's own rings ("metadata", "upload", "readback") once, then
 * the device's totals, its persistent_memory setting and its budget. docs/api.md shows the
 * layout. *out_json is a new string for cubec_string_free; NULL on error. */
CUBEC_MUST_USE cubec_status cubec_memory_report_json(cubec_device *device, char **out_json);
/* The same report as an aligned text table, for people (a "windows" line under each slot with
 * open windows, a "memory" line with the persistent_memory setting). */
CUBEC_MUST_USE cubec_status cubec_memory_report_table(cubec_device *device, char **out_text);
/* Frees a string the library returned. NULL is accepted. */
void cubec_string_free(char *s);

/* ---------------------------------------------------------------------------------------------
 * Names of 0.1, kept for this release (0.2) and removed in the next (docs/api.md, "Naming"): each
 * is an exported function that forwards to its new name.
 * ------------------------------------------------------------------------------------------- */

/* Deprecated (0.2): cubec_buffer_get_size, which it forwards to. */
CUBEC_DEPRECATED("use cubec_buffer_get_size")
CUBEC_MUST_USE cubec_status cubec_buffer_size(cubec_device *device, cubec_buffer buffer,
                                              uint64_t *out_size);
/* Deprecated (0.2): cubec_profile_get_method, which it forwards to. */
CUBEC_DEPRECATED("use cubec_profile_get_method")
CUBEC_MUST_USE cubec_status cubec_profile_method(cubec_device *device, cubec_timing *out_method);
/* Deprecated (0.2): cubec_fault_get_counts, which it forwards to. */
CUBEC_DEPRECATED("use cubec_fault_get_counts")
CUBEC_MUST_USE cubec_status cubec_fault_counts(cubec_device *device,
                                               uint64_t out_counts[CUBEC_FAULT_KIND_COUNT]);
/* Deprecated (0.2): cubec_device_get_vulkan_handles, which it forwards to. */
CUBEC_DEPRECATED("use cubec_device_get_vulkan_handles")
CUBEC_MUST_USE cubec_status cubec_device_vulkan_handles(cubec_device *device,
                                                        cubec_vulkan_handles *out_handles);
/* Deprecated (0.2): cubec_stream_get_current, which it forwards to. */
CUBEC_DEPRECATED("use cubec_stream_get_current")
CUBEC_MUST_USE cubec_status cubec_stream_current(cubec_device *device, cubec_stream *out_stream);
/* Deprecated (0.2): cubec_device_get_count, which it forwards to. */
CUBEC_DEPRECATED("use cubec_device_get_count")
CUBEC_MUST_USE cubec_status cubec_device_count(uint32_t *out_count);
/* Deprecated (0.2): cubec_memory_window_begin, which it forwards to. */
CUBEC_DEPRECATED("use cubec_memory_window_begin")
CUBEC_MUST_USE cubec_status cubec_memory_mode_push(cubec_device *device, cubec_stream stream,
                                                   cubec_memory_mode mode);
/* Deprecated (0.2): cubec_memory_window_end, which it forwards to. */
CUBEC_DEPRECATED("use cubec_memory_window_end")
CUBEC_MUST_USE cubec_status cubec_memory_mode_pop(cubec_device *device, cubec_stream stream);
/* Deprecated (0.2): cubec_memory_window_get, which it forwards to. */
CUBEC_DEPRECATED("use cubec_memory_window_get")
CUBEC_MUST_USE cubec_status cubec_memory_mode_get(cubec_device *device, cubec_stream stream,
                                                  cubec_memory_mode *out_mode, uint32_t *out_depth);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif
#endif
