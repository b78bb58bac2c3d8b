/* `cubec info --json` (tools/info_json.c): the device list as one JSON object, written in three
 * steps so that cmd_info.c gathers the devices once for the text and the JSON forms:
 *   {"backends": [...], "backend": "vulkan", "devices": [{...}, ...], "default_error": null}
 */
#ifndef CUBEC_TOOLS_INFO_JSON_H
#define CUBEC_TOOLS_INFO_JSON_H

#include <cubec/cubec.h>

#include <stdint.h>
#include <stdio.h>

/* The backends of this build, in order, and the index of the selected one; opens "devices". */
void info_json_begin(FILE *out, const char *const *backends, int backend_count, int selected);
/* One device (`first`: the first of the list). `type` and `vendor` are the words `cubec info`
 * prints; `off_by_config` (the default device only) the features the configuration turned off;
 * `webgpu`: a device of the webgpu backend (no Vulkan API version; a "webgpu" object). */
void info_json_device(FILE *out, int first, uint32_t index, const cubec_device_info *d,
                      const char *type, const char *vendor, int is_default, uint64_t off_by_config,
                      int webgpu);
/* Closes "devices"; `default_error` (NULL: none) says why the default device did not open. */
void info_json_end(FILE *out, int any_device, const char *default_error);

#endif
