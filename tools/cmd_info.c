/* `cubec info`: the backends, and every device of the selected one (Vulkan by default) present,
 * with the limits that matter to compute kernels, and which one a program gets from
 * cubec_device_open(NULL).
 *
 * The devices are described with cubec_device_peek, which opens nothing. The default is found by
 * really opening it: that way the answer follows the library's own choice (device ranking,
 * CUBEC_DEVICE, the config file) instead of a copy of its rules that could drift.
 *
 * `--memory` prints the default device's memory report right after opening it: what the device
 * holds before any buffer (the runtime's rings), with the same formatter programs call. */
#include "cli.h"
#include "info_json.h"
#include "webgpu_driver.h"

#include "gpu/gpu.h"

#include <inttypes.h>
#include <string.h>

void cli_info_usage(FILE *out)
{
    fprintf(
        out,
        "usage: cubec info [--json] | --memory [--json] | --topology [--json]\n"
        "\n"
        "Lists the backends cubec has (the one CUBEC_BACKEND selects marked), then every\n"
        "device of the selected backend with its name, type, vendor and device id, driver, API\n"
        "version (on webgpu: the implementation, its library and the adapter's backend instead),\n"
        "compute limits, the optional shader features cubec enables on it\n"
        "(cubec_feature) and the cooperative-matrix shapes M x N x K with their A*B+C->result\n"
        "element types, and marks the one cubec_device_open(NULL) picks\n"
        "(CUBEC_DEVICE=<index or part of the name> changes it).\n"
        "\n"
        "  --json     the same as one JSON object on stdout, for scripts: \"backends\",\n"
        "             \"backend\", \"devices\" (each with every field of cubec_device_info,\n"
        "             \"features\" by name, \"default\"), \"default_error\" (docs/cli.md)\n"
        "  --memory   open the default device and print its memory report as a table (per\n"
        "             stream slot, then the runtime's rings); it allocates nothing, so it\n"
        "             shows what a device holds before the first buffer\n"
        "  --json     with --memory: the report as JSON (cubec_memory_report_json)\n"
        "  --topology open every device (one present: twice) and print, per ordered pair,\n"
        "             the path cubec_copy_peer uses, the link class and the bandwidth of a\n"
        "             4 MiB copy measured now (docs/multi-device-paths.md); --json: as JSON\n");
}

static const char *type_name(cubec_device_type type)
{
    switch (type) {
    case CUBEC_DEVICE_TYPE_INTEGRATED: return "integrated GPU";
    case CUBEC_DEVICE_TYPE_DISCRETE: return "discrete GPU";
    case CUBEC_DEVICE_TYPE_VIRTUAL: return "virtual GPU";
    case CUBEC_DEVICE_TYPE_CPU: return "CPU";
    case CUBEC_DEVICE_TYPE_OTHER: break;
    }
    return "other";
}

/* PCI vendor ids, and the Khronos ids of vendors without one (VkVendorId). */
static const char *vendor_name(uint32_t vendor_id)
{
    switch (vendor_id) {
    case 0x1002: return "AMD";
    case 0x1010: return "Imagination";
    case 0x106B: return "Apple";
    case 0x10DE: return "NVIDIA";
    case 0x13B5: return "ARM";
    case 0x5143: return "Qualcomm";
    case 0x8086: return "Intel";
    case 0x10001: return "Vivante";
    case 0x10002: return "VeriSilicon";
    case 0x10003: return "Kazan";
    case 0x10004: return "Codeplay";
    case 0x10005: return "Mesa";
    case 0x10006: return "PoCL";
    case 0x10007: return "Mobileye";
    default: return "unknown vendor";
    }
}

/* Same device? Peek and open report the same properties, and two devices that agree on all of
 * these are interchangeable for the purpose of saying which one is the default. */
static int same_device(const cubec_device_info *a, const cubec_device_info *b)
{
    return a->vendor_id == b->vendor_id && a->device_id == b->device_id && a->type == b->type &&
           strcmp(a->name, b->name) == 0 && strcmp(a->driver, b->driver) == 0;
}

static const char *capability_name(uint64_t bit)
{
    return cubec_capability_name((uint32_t)bit);
}

/* The names of the bits in `bits` (cubec_feature_name's, or capability_name's), wrapped under
 * the value column. */
static void print_bit_names(const char *label, uint64_t bits, const char *(*name_of)(uint64_t))
{
    printf("  %-28s", label);
    int column = 31, any = 0;
    for (uint64_t bit = 1; bit; bit <<= 1) {
        if (!(bits & bit)) continue;
        const char *name = name_of(bit);
        int width = (int)strlen(name) + 1;
        if (any && column + width > 100) {
            printf("\n  %-28s", "");
            column = 31;
        }
        printf(" %s", name);
        column += width;
        any = 1;
    }
    printf("%s\n", any ? "" : " none");
}

static void print_features(const char *label, uint64_t bits)
{
    print_bit_names(label, bits, cubec_feature_name);
}

/* One line per cooperative-matrix shape: "16x8x16 float16*float16+float32->float32 (KHR)". */
static void print_matrix_shapes(const cubec_device_info *d)
{
    if (d->matrix_shape_count == 0) {
        printf("  %-28s none\n", "cooperative matrix shapes");
        return;
    }
    for (uint32_t i = 0; i < d->matrix_shape_count; i++) {
        const cubec_matrix_shape *s = &d->matrix_shapes[i];
        printf("  %-28s %" PRIu32 "x%" PRIu32 "x%" PRIu32 " %s*%s+%s->%s%s (%s)\n",
               i == 0 ? "cooperative matrix shapes" : "", s->m, s->n, s->k,
               cubec_matrix_type_name(s->a), cubec_matrix_type_name(s->b),
               cubec_matrix_type_name(s->c), cubec_matrix_type_name(s->result),
               s->saturating ? " saturating" : "", s->nv ? "NV" : "KHR");
    }
}

/* The lines of the driver and the API version: on webgpu the implementation, its library, the
 * adapter's backend and description (the driver string's parts), since the device is no Vulkan
 * device even where wgpu runs on Vulkan, and api_version is only the SPIR-V the server makes. */
static void print_driver(const cubec_device_info *d, int webgpu)
{
    webgpu_driver w;
    if (webgpu && webgpu_driver_parse(d->driver, &w)) {
        printf("  %-28s %s\n", "driver", w.description);
        printf("  %-28s %s\n", "WebGPU implementation",
               w.implementation[0] ? w.implementation : "unknown version");
        printf("  %-28s %s\n", "WebGPU library", w.library);
        printf("  %-28s %s\n", "WebGPU adapter backend", w.backend);
        return;
    }
    printf("  %-28s %s\n", "driver", d->driver);
    if (webgpu) return;
    /* VK_API_VERSION_MAJOR/MINOR/PATCH, spelled out so the tool needs no Vulkan header. */
    printf("  %-28s %" PRIu32 ".%" PRIu32 ".%" PRIu32 "\n", "Vulkan API version",
           (d->api_version >> 22) & 0x7Fu, (d->api_version >> 12) & 0x3FFu,
           d->api_version & 0xFFFu);
}

/* `webgpu`: a device of the webgpu backend, whose lines say what WebGPU does where Vulkan's
 * words would not be true (docs/device.md, "The WebGPU backend"). */
static void print_device(uint32_t index, const cubec_device_info *d, int is_default, int webgpu)
{
    char b1[64];
    printf("device %" PRIu32 ": %s%s\n", index, d->name, is_default ? "  [default]" : "");
    printf("  %-28s %s\n", "type", type_name(d->type));
    printf("  %-28s %s\n", "backend", d->backend);
    printf("  %-28s 0x%04" PRIx32 " (%s)\n", "vendor id", d->vendor_id, vendor_name(d->vendor_id));
    printf("  %-28s 0x%04" PRIx32 "\n", "device id", d->device_id);
    print_driver(d, webgpu);
    printf("  %-28s %s\n", "unified memory", d->unified_memory ? "yes (no staging copies)" : "no");
    if (webgpu)
        printf("  %-28s %s\n", "bindings", "bind groups, cached");
    else
        printf("  %-28s %s\n", "push descriptors", d->push_descriptors ? "yes" : "no");
    printf("  %-28s %s\n", "bounds checks (robust)",
           webgpu ? "always (WebGPU: an access stays within its buffer's binding)"
           : d->robust == CUBEC_ROBUST_BUFFER ? "per buffer (robustBufferAccess2)"
           : d->robust                        ? "per pool page (robustBufferAccess)"
                                              : "none");
    /* WebGPU reports no heap: the backend's estimate (docs/device.md, "The WebGPU backend"). */
    printf("  %-28s %s\n", webgpu ? "memory (estimated)" : "device-local heap",
           cli_format_bytes(d->device_local_heap_size, b1, sizeof b1));
    printf("  %-28s %s\n", "max storage buffer range",
           cli_format_bytes(d->max_storage_buffer_range, b1, sizeof b1));
    printf("  %-28s %s\n", "max allocation size",
           cli_format_bytes(d->max_allocation_size, b1, sizeof b1));
    printf("  %-28s %" PRIu64 " B\n", "storage offset alignment", d->storage_offset_alignment);
    printf("  %-28s %" PRIu64 " B\n", "uniform offset alignment", d->uniform_offset_alignment);
    /* cubec_host_register takes ranges of this alignment on every backend; WebGPU imports none,
     * so a registered range is copied through staging there (src/server/host_memory.c). */
    if (d->host_register_alignment)
        printf("  %-28s %" PRIu64 " B%s\n", "host register alignment", d->host_register_alignment,
               webgpu ? " (copied through staging: WebGPU imports no host memory)" : "");
    printf("  %-28s %" PRIu32 " B\n", webgpu ? "max immediates" : "max push constants",
           d->max_push_constants_size);
    printf("  %-28s %" PRIu32 " x %" PRIu32 " x %" PRIu32 "\n", "max workgroup count",
           d->max_workgroup_count[0], d->max_workgroup_count[1], d->max_workgroup_count[2]);
    printf("  %-28s %" PRIu32 " x %" PRIu32 " x %" PRIu32 "\n", "max workgroup size",
           d->max_workgroup_size[0], d->max_workgroup_size[1], d->max_workgroup_size[2]);
    printf("  %-28s %" PRIu32 "\n", "max workgroup invocations", d->max_workgroup_invocations);
    printf("  %-28s %s\n", "max shared memory",
           cli_format_bytes(d->max_shared_memory_size, b1, sizeof b1));
    printf("  %-28s %" PRIu32, "subgroup size", d->subgroup_size);
    if (d->min_subgroup_size)
        printf(" (range %" PRIu32 "..%" PRIu32 ")", d->min_subgroup_size, d->max_subgroup_size);
    printf("\n");
    printf("  %-28s %g ns\n", "timestamp period", d->timestamp_period_ns);
    print_features("shader features", d->features);
    /* What differs between backends and devices (docs/api.md, "Device capabilities"). */
    print_bit_names("capabilities", d->capabilities, capability_name);
    print_matrix_shapes(d);
    if (d->tasks_max != 0) printf("  %-28s %" PRIu32 "\n", "tasks per submission", d->tasks_max);
}

/* `cubec info --memory`: the default device's memory report, from the library's own formatter
 * so that the tool and programs print the same thing. */
static int memory_main(int json)
{
    cubec_device *device = NULL;
    if (cli_failed("info", cubec_device_open(NULL, &device), "opening the default device"))
        return CLI_EXIT_RUNTIME;
    char *text = NULL;
    cubec_status status =
        json ? cubec_memory_report_json(device, &text) : cubec_memory_report_table(device, &text);
    int exit_code = CLI_EXIT_OK;
    if (cli_failed("info", status, "reading the memory report")) {
        exit_code = CLI_EXIT_RUNTIME;
    } else {
        if (!json) {
            cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
            if (cubec_device_get_info(device, &info) == NULL)
                printf("memory of %s (nothing allocated by this command)\n", info.name);
        }
        fputs(text, stdout);
    }
    cubec_string_free(text);
    cubec_device_close(device);
    return exit_code;
}

/* No webgpu device counted: the count does not say whether no implementation loaded or the one
 * that did found no adapter, and opening the default device does, with the paths tried. The
 * reason, "CODE: message", into `why` ("no devices" when the open succeeds after all). */
static void why_no_webgpu_device(char *why, size_t size)
{
    cubec_device *device = NULL;
    cubec_status status = cubec_device_open(NULL, &device);
    if (status == NULL) {
        cubec_device_close(device);
        snprintf(why, size, "no devices");
        return;
    }
    snprintf(why, size, "%s: %s", cubec_code_name(cubec_status_code(status)),
             cubec_status_message(status));
    cubec_status_free(status);
}

/* "backends: vulkan [selected], null": the backends of this build (GPU_BACKENDS), the one the
 * configuration selects (CUBEC_BACKEND, read as cubec_device_open reads it) marked; the devices
 * listed after it are that backend's. With `json`, the opening of the JSON object instead. 0 when
 * the configuration cannot be read (reported). */
static int print_backends(gpu_backend *out_selected, int json)
{
    int selected = 0;
    if (!cli_selected_backend("info", &selected)) return 0;
    *out_selected = (gpu_backend)selected;
    if (json) {
        const char *names[GPU_BACKEND_COUNT];
        for (int b = 0; b < GPU_BACKEND_COUNT; b++)
            names[b] = gpu_backend_name((gpu_backend)b);
        info_json_begin(stdout, names, GPU_BACKEND_COUNT, selected);
        return 1;
    }
    printf("backends:");
    for (int b = 0; b < GPU_BACKEND_COUNT; b++)
        printf("%s %s%s", b ? "," : "", gpu_backend_name((gpu_backend)b),
               b == selected ? " [selected]" : "");
    printf("  (CUBEC_BACKEND)\n");
    return 1;
}

int cli_info_main(int argc, char **argv)
{
    int memory = 0, json = 0, topology = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            cli_info_usage(stdout);
            return CLI_EXIT_OK;
        }
        if (strcmp(argv[i], "--memory") == 0) {
            memory = 1;
            continue;
        }
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
            continue;
        }
        if (strcmp(argv[i], "--topology") == 0) {
            topology = 1;
            continue;
        }
        if (argv[i][0] == '-') return cli_usage_error("info", "unknown flag '%s'", argv[i]);
        return cli_usage_error("info", "unexpected argument '%s'", argv[i]);
    }
    if (memory && topology)
        return cli_usage_error("info", "--memory and --topology exclude each other");
    if (memory) return memory_main(json);
    if (topology) return cli_topology_main(json);

    /* Counted before anything is printed, so that a failure (no driver) leaves stdout empty
     * rather than half a JSON object. */
    uint32_t count = 0;
    if (cli_failed("info", cubec_device_get_count(&count), "counting devices"))
        return CLI_EXIT_RUNTIME;
    gpu_backend backend = (gpu_backend)0;
    if (!print_backends(&backend, json)) return CLI_EXIT_RUNTIME;
    const int webgpu = cli_backend_is_webgpu((int)backend);
    char why[1024] = "no devices";
    if (count == 0 && webgpu) why_no_webgpu_device(why, sizeof why);
    if (count == 0 && json) {
        info_json_end(stdout, 0, why);
        return CLI_EXIT_RUNTIME;
    }
    if (count == 0) {
        if (webgpu)
            printf("no webgpu devices: %s\n", why);
        else
            printf("no %s devices (is a Vulkan driver installed? Mesa's lavapipe runs on any "
                   "CPU)\n",
                   gpu_backend_name(backend));
        return CLI_EXIT_RUNTIME;
    }

    /* Open the default device only long enough to learn which one it is. Failing to open it is
     * reported, but the list is still worth printing: it is what one needs to pick another. */
    int exit_code = CLI_EXIT_OK;
    cubec_device_info default_info = CUBEC_DEVICE_INFO_INIT;
    int have_default = 0;
    cubec_device *device = NULL;
    cubec_status status = cubec_device_open(NULL, &device);
    if (status == NULL) {
        status = cubec_device_get_info(device, &default_info);
        have_default = status == NULL;
        cubec_device_close(device);
    }
    char default_error[1024] = "";
    if (status)
        snprintf(default_error, sizeof default_error, "%s: %s",
                 cubec_code_name(cubec_status_code(status)), cubec_status_message(status));
    if (cli_failed("info", status, "opening the default device")) exit_code = CLI_EXIT_RUNTIME;

    if (!json)
        printf("%" PRIu32 " %s device%s\n", count, gpu_backend_name(backend),
               count == 1 ? "" : "s");
    int default_marked = 0, listed = 0;
    for (uint32_t i = 0; i < count; i++) {
        cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
        char what[64];
        snprintf(what, sizeof what, "reading device %" PRIu32, i);
        if (cli_failed("info", cubec_device_peek(i, &info), what)) {
            exit_code = CLI_EXIT_RUNTIME;
            continue;
        }
        /* Identical devices (eight of the same GPU) are told apart only by index; the library
         * takes the first of equals, so the first match is the one to mark. */
        const int is_default = have_default && !default_marked && same_device(&info, &default_info);
        default_marked |= is_default;
        const uint64_t off = is_default ? info.features & ~default_info.features : 0;
        if (json) {
            info_json_device(stdout, !listed, i, &info, type_name(info.type),
                             vendor_name(info.vendor_id), is_default, off, webgpu);
            listed++;
            continue;
        }
        printf("\n");
        print_device(i, &info, is_default, webgpu);
        if (off) print_features("features off by config", off);
    }
    if (json) {
        info_json_end(stdout, listed, default_error[0] ? default_error : NULL);
        return exit_code;
    }
    if (have_default && !default_marked) {
        printf("\ndefault device: %s (not in the list above?)\n", default_info.name);
    }
    return exit_code;
}
