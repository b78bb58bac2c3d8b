/* The push-constant block moved to a storage buffer at the metadata binding (push_to_buffer.h). */
#include "kernel/push_to_buffer.h"

#include "kernel/reflect.h"

#include <stdlib.h>
#include <string.h>

#define HEADER_WORDS 5u
#define OP_EXTENSION 10u
#define OP_CAPABILITY 17u
#define OP_TYPE_POINTER 32u
#define OP_VARIABLE 59u
#define OP_DECORATE 71u
#define SC_PUSH_CONSTANT 9u
#define SC_STORAGE_BUFFER 12u
#define DEC_NON_WRITABLE 24u
#define DEC_BINDING 33u
#define DEC_DESCRIPTOR_SET 34u
#define SPIRV_1_3 0x00010300u
#define CAP_STORAGE_BUFFER_16 4433u /* StorageBuffer16BitAccess */
#define CAP_UNIFORM_AND_STORAGE_BUFFER_16 4434u
#define CAP_PUSH_CONSTANT_16 4435u /* StoragePushConstant16 */
#define CAP_STORAGE_BUFFER_8 4448u /* StorageBuffer8BitAccess */
#define CAP_UNIFORM_AND_STORAGE_BUFFER_8 4449u
#define CAP_PUSH_CONSTANT_8 4450u /* StoragePushConstant8 */

static const char storage_class_ext[] = "SPV_KHR_storage_buffer_storage_class";

/* Annotation instructions: the new decorations go after the last of them. */
static int is_annotation(uint32_t op)
{
    return (op >= 71u && op <= 75u) || op == 332u || op == 5632u || op == 5633u;
}

/* Where things are in the module: found in one walk. */
typedef struct module_marks {
    size_t after_capabilities; /* word index after the last OpCapability */
    size_t after_annotations;  /* ... after the last annotation (0: none) */
    size_t first_type;         /* ... of the first OpType*, where annotations would go */
    uint32_t variable;         /* the push-constant variable's id */
    uint32_t variables;        /* how many there are */
    int has_extension;         /* SPV_KHR_storage_buffer_storage_class is declared */
    int has_buffer_16;         /* StorageBuffer16BitAccess is declared, or implied */
    int has_buffer_8;          /* StorageBuffer8BitAccess is declared, or implied */
} module_marks;

static cubec_status scan(const uint32_t *words, size_t count, module_marks *m)
{
    memset(m, 0, sizeof *m);
    m->after_capabilities = HEADER_WORDS;
    for (size_t i = HEADER_WORDS; i < count;) {
        uint32_t wc = words[i] >> 16, op = words[i] & 0xffffu;
        if (wc == 0 || i + wc > count)
            return status_make(CUBEC_INVALID_SPIRV,
                               "moving the push-constant block to a buffer: instruction at word "
                               "%zu is truncated",
                               i);
        if (op == OP_CAPABILITY) {
            m->after_capabilities = i + wc;
            uint32_t cap = wc >= 2 ? words[i + 1] : 0;
            if (cap == CAP_STORAGE_BUFFER_16 || cap == CAP_UNIFORM_AND_STORAGE_BUFFER_16)
                m->has_buffer_16 = 1;
            if (cap == CAP_STORAGE_BUFFER_8 || cap == CAP_UNIFORM_AND_STORAGE_BUFFER_8)
                m->has_buffer_8 = 1;
        }
        if (op == OP_EXTENSION && (size_t)(wc - 1) * 4 >= sizeof storage_class_ext &&
            memcmp(&words[i + 1], storage_class_ext, sizeof storage_class_ext) == 0)
            m->has_extension = 1;
        if (is_annotation(op)) m->after_annotations = i + wc;
        if (!m->first_type && op >= 19u && op <= 39u) m->first_type = i;
        if (op == OP_VARIABLE && wc >= 4 && words[i + 3] == SC_PUSH_CONSTANT) {
            m->variable = words[i + 2];
            m->variables++;
        }
        i += wc;
    }
    if (m->variables != 1)
        return status_make(CUBEC_INVALID_SPIRV,
                           "moving the push-constant block to a buffer: the module has %u "
                           "push-constant variables, not one",
                           m->variables);
    if (!m->after_annotations) m->after_annotations = m->first_type;
    return NULL;
}

cubec_status kernel_push_to_buffer(const uint32_t *words, size_t count, uint32_t **out_words,
                                   size_t *out_count)
{
    *out_words = NULL;
    *out_count = 0;
    if (!words || count < HEADER_WORDS)
        return status_make(CUBEC_INVALID_SPIRV,
                           "moving the push-constant block to a buffer: %zu words, shorter than "
                           "the header",
                           count);
    module_marks m;
    RETURN_IF_ERROR(scan(words, count, &m));
    int add_extension = words[1] < SPIRV_1_3 && !m.has_extension;
    size_t ext_words = add_extension ? 1 + (sizeof storage_class_ext + 3) / 4 : 0;
    const uint32_t decorations[11] = {
        (4u << 16) | OP_DECORATE, m.variable, DEC_DESCRIPTOR_SET, 0,
        (4u << 16) | OP_DECORATE, m.variable, DEC_BINDING,        CUBEC_INFO_BINDING,
        (3u << 16) | OP_DECORATE, m.variable, DEC_NON_WRITABLE};
    size_t total = count + ext_words + 11;
    uint32_t *out = calloc(total, sizeof *out);
    if (!out)
        return status_make(CUBEC_OUT_OF_MEMORY,
                           "host out of memory (moving the push-constant block)");
    size_t o = 0;
    for (size_t i = 0; i < count;) {
        if (i == m.after_capabilities && ext_words) {
            out[o] = ((uint32_t)ext_words << 16) | OP_EXTENSION;
            memcpy(&out[o + 1], storage_class_ext, sizeof storage_class_ext);
            o += ext_words;
        }
        if (i == m.after_annotations) {
            memcpy(&out[o], decorations, sizeof decorations);
            o += 11;
        }
        uint32_t wc = i < HEADER_WORDS ? 1 : words[i] >> 16;
        uint32_t op = i < HEADER_WORDS ? 0 : words[i] & 0xffffu;
        /* The block's 16- and 8-bit members are now read from a storage buffer: the
         * push-constant capability becomes the storage-buffer one (which the device must have:
         * capabilities_check names the feature), or goes where the module has that already. */
        uint32_t cap = op == OP_CAPABILITY && wc == 2 ? words[i + 1] : 0;
        if ((cap == CAP_PUSH_CONSTANT_16 && m.has_buffer_16) ||
            (cap == CAP_PUSH_CONSTANT_8 && m.has_buffer_8)) {
            i += wc;
            continue;
        }
        memcpy(&out[o], &words[i], wc * sizeof *out);
        if (cap == CAP_PUSH_CONSTANT_16) out[o + 1] = CAP_STORAGE_BUFFER_16;
        if (cap == CAP_PUSH_CONSTANT_8) out[o + 1] = CAP_STORAGE_BUFFER_8;
        /* Both carry the storage class as their third word (result id first for a pointer
         * type, the result type first for a variable). */
        if ((op == OP_TYPE_POINTER || op == OP_VARIABLE) &&
            out[o + 2 + (op == OP_VARIABLE)] == SC_PUSH_CONSTANT)
            out[o + 2 + (op == OP_VARIABLE)] = SC_STORAGE_BUFFER;
        o += wc;
        i += wc;
    }
    *out_words = out;
    *out_count = o;
    return NULL;
}
