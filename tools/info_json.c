/* `cubec info --json`: the backends and every device of the selected one as one JSON object on
 * stdout, for scripts (the text of `cubec info` is for people and may change its layout). The
 * fields are those of cubec_device_info under the same names, with the feature bits and
 * cooperative-matrix types spelled as `cubec info` spells them; docs/cli.md lists them.
 * Every string goes through json_string, so a device name with a quote stays valid JSON. */
#include "info_json.h"
#include "webgpu_driver.h"

#include <inttypes.h>
#include <stdio.h>

/* A JSON string: quotes, backslashes and control bytes escaped; other bytes as they are (device
 * and driver names are UTF-8). */
static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

static void json_features(FILE *out, uint64_t bits)
{
    fputc('[', out);
    int any = 0;
    for (uint64_t bit = 1; bit; bit <<= 1) {
        if (!(bits & bit)) continue;
        fprintf(out, "%s", any ? ", " : "");
        json_string(out, cubec_feature_name((cubec_feature)bit));
        any = 1;
    }
    fputc(']', out);
}

/* The CUBEC_CAPABILITY_* bits by name (docs/api.md, "Device capabilities"). */
static void json_capabilities(FILE *out, uint32_t bits)
{
    fputc('[', out);
    int any = 0;
    for (uint32_t bit = 1; bit; bit <<= 1) {
        if (!(bits & bit)) continue;
        fprintf(out, "%s", any ? ", " : "");
        json_string(out, cubec_capability_name(bit));
        any = 1;
    }
    fputc(']', out);
}

static void json_u32x3(FILE *out, const uint32_t v[3])
{
    fprintf(out, "[%" PRIu32 ", %" PRIu32 ", %" PRIu32 "]", v[0], v[1], v[2]);
}

void info_json_begin(FILE *out, const char *const *backends, int backend_count, int selected)
{
    fprintf(out, "{\n  \"backends\": [");
    for (int b = 0; b < backend_count; b++) {
        fprintf(out, "%s", b ? ", " : "");
        json_string(out, backends[b]);
    }
    fprintf(out, "],\n  \"backend\": ");
    json_string(out, backends[selected]);
    fprintf(out, ",\n  \"devices\": [");
}

/* A webgpu device's "webgpu" object: the parts of its driver string (webgpu_driver.h), each
 * null where the string is not in the backend's form. */
static void json_webgpu(FILE *out, const cubec_device_info *d)
{
    webgpu_driver w;
    const int parsed = webgpu_driver_parse(d->driver, &w);
    const char *names[] = {"implementation", "library", "adapter_backend", "description"};
    const char *values[] = {w.implementation, w.library, w.backend, w.description};
    fprintf(out, "      \"webgpu\": {");
    for (int i = 0; i < 4; i++) {
        fprintf(out, "%s\"%s\": ", i ? ", " : "", names[i]);
        if (parsed && values[i][0])
            json_string(out, values[i]);
        else
            fprintf(out, "null");
    }
    fprintf(out, "},\n");
}

void info_json_device(FILE *out, int first, uint32_t index, const cubec_device_info *d,
                      const char *type, const char *vendor, int is_default, uint64_t off_by_config,
                      int webgpu)
{
    fprintf(out, "%s\n    {\n      \"index\": %" PRIu32 ",\n      \"default\": %s,\n",
            first ? "" : ",", index, is_default ? "true" : "false");
    fprintf(out, "      \"name\": ");
    json_string(out, d->name);
    fprintf(out, ",\n      \"type\": ");
    json_string(out, type);
    fprintf(out, ",\n      \"vendor_id\": %" PRIu32 ",\n      \"vendor\": ", d->vendor_id);
    json_string(out, vendor);
    fprintf(out, ",\n      \"device_id\": %" PRIu32 ",\n      \"driver\": ", d->device_id);
    json_string(out, d->driver);
    /* VK_API_VERSION_MAJOR/MINOR/PATCH, as `cubec info` prints them, and the packed value; null
     * on webgpu, whose devices are no Vulkan devices (api_version is the SPIR-V cubec makes for
     * the implementation), and the implementation's facts instead. */
    if (webgpu) {
        fprintf(out, ",\n      \"api_version\": null,\n      \"api_version_packed\": null,\n");
        json_webgpu(out, d);
    } else {
        fprintf(out,
                ",\n      \"api_version\": \"%" PRIu32 ".%" PRIu32 ".%" PRIu32 "\",\n"
                "      \"api_version_packed\": %" PRIu32 ",\n",
                (d->api_version >> 22) & 0x7Fu, (d->api_version >> 12) & 0x3FFu,
                d->api_version & 0xFFFu, d->api_version);
    }
    fprintf(out, "      \"unified_memory\": %s,\n", d->unified_memory ? "true" : "false");
    fprintf(out, "      \"push_descriptors\": %s,\n", d->push_descriptors ? "true" : "false");
    /* What the bounds-checked mode gives on the device: "buffer", "page" or "none"; on webgpu
     * "always": WebGPU keeps every access within its binding, no mode asked. */
    fprintf(out, "      \"robust\": \"%s\",\n",
            webgpu                             ? "always"
            : d->robust == CUBEC_ROBUST_BUFFER ? "buffer"
            : d->robust                        ? "page"
                                               : "none");
    fprintf(out, "      \"device_local_heap_size\": %" PRIu64 ",\n", d->device_local_heap_size);
    fprintf(out, "      \"max_storage_buffer_range\": %" PRIu64 ",\n", d->max_storage_buffer_range);
    fprintf(out, "      \"max_allocation_size\": %" PRIu64 ",\n", d->max_allocation_size);
    fprintf(out, "      \"storage_offset_alignment\": %" PRIu64 ",\n", d->storage_offset_alignment);
    fprintf(out, "      \"uniform_offset_alignment\": %" PRIu64 ",\n", d->uniform_offset_alignment);
    fprintf(out, "      \"host_register_alignment\": %" PRIu64 ",\n", d->host_register_alignment);
    fprintf(out, "      \"max_push_constants_size\": %" PRIu32 ",\n", d->max_push_constants_size);
    fprintf(out, "      \"max_workgroup_count\": ");
    json_u32x3(out, d->max_workgroup_count);
    fprintf(out, ",\n      \"max_workgroup_size\": ");
    json_u32x3(out, d->max_workgroup_size);
    fprintf(out, ",\n      \"max_workgroup_invocations\": %" PRIu32 ",\n",
            d->max_workgroup_invocations);
    fprintf(out, "      \"max_shared_memory_size\": %" PRIu32 ",\n", d->max_shared_memory_size);
    fprintf(out, "      \"subgroup_size\": %" PRIu32 ",\n", d->subgroup_size);
    fprintf(out, "      \"min_subgroup_size\": %" PRIu32 ",\n", d->min_subgroup_size);
    fprintf(out, "      \"max_subgroup_size\": %" PRIu32 ",\n", d->max_subgroup_size);
    fprintf(out, "      \"timestamp_period_ns\": %.17g,\n", d->timestamp_period_ns);
    fprintf(out, "      \"features\": ");
    json_features(out, d->features);
    if (is_default) {
        fprintf(out, ",\n      \"features_off_by_config\": ");
        json_features(out, off_by_config);
    }
    fprintf(out, ",\n      \"backend\": ");
    json_string(out, d->backend);
    fprintf(out, ",\n      \"capabilities\": ");
    json_capabilities(out, d->capabilities);
    fprintf(out, ",\n      \"cooperative_matrix_shapes\": [");
    for (uint32_t i = 0; i < d->matrix_shape_count; i++) {
        const cubec_matrix_shape *s = &d->matrix_shapes[i];
        fprintf(out,
                "%s\n        {\"m\": %" PRIu32 ", \"n\": %" PRIu32 ", \"k\": %" PRIu32
                ", \"a\": \"%s\", \"b\": \"%s\", \"c\": \"%s\", \"result\": \"%s\", "
                "\"saturating\": %s, \"extension\": \"%s\"}",
                i ? "," : "", s->m, s->n, s->k, cubec_matrix_type_name(s->a),
                cubec_matrix_type_name(s->b), cubec_matrix_type_name(s->c),
                cubec_matrix_type_name(s->result), s->saturating ? "true" : "false",
                s->nv ? "NV" : "KHR");
    }
    fprintf(out, "%s]\n    }", d->matrix_shape_count ? "\n      " : "");
}

void info_json_end(FILE *out, int any_device, const char *default_error)
{
    fprintf(out, "%s],\n  \"default_error\": ", any_device ? "\n  " : "");
    if (default_error)
        json_string(out, default_error);
    else
        fprintf(out, "null");
    fprintf(out, "\n}\n");
}
