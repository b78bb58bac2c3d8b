/* A SPIR-V module read by SPIRV-Tools' binary parser (wg_spirv_parse.h). */
#include "gpu/webgpu/wg_spirv_parse.h"

#include "base/array.h"

/* libspirv.h defines a const kDefaultMaxIdBound at file scope, an external definition in C: a
 * per-file name keeps it from clashing with kernel/reflect.c's. */
#define kDefaultMaxIdBound wg_spirv_parse_max_id_bound_
#include <spirv-tools/libspirv.h>
#undef kDefaultMaxIdBound

#include <stdlib.h>
#include <string.h>

typedef struct reader {
    wg_spirv *m;
    uint32_t cap, use_cap;
    size_t at;
    int oom;
} reader;

/* Room for `need` elements, from 256 (a module has hundreds of instructions at least). */
static int grow(void **p, uint32_t *cap, uint64_t need, size_t size)
{
    return array_grow_ex(p, cap, need, size, 256, UINT32_MAX, realloc) == 0;
}

static spv_result_t on_header(void *user, spv_endianness_t endian, uint32_t magic, uint32_t version,
                              uint32_t generator, uint32_t id_bound, uint32_t reserved)
{
    (void)user, (void)endian, (void)magic, (void)version, (void)generator, (void)id_bound;
    (void)reserved;
    return SPV_SUCCESS;
}

static spv_result_t on_inst(void *user, const spv_parsed_instruction_t *pi)
{
    reader *r = user;
    wg_spirv *m = r->m;
    size_t use_count = m->count ? m->v[m->count - 1].uses + m->v[m->count - 1].use_count : 0;
    if (!grow((void **)&m->v, &r->cap, m->count + 1, sizeof *m->v) ||
        !grow((void **)&m->uses, &r->use_cap, use_count + pi->num_operands, sizeof *m->uses)) {
        r->oom = 1;
        return SPV_ERROR_OUT_OF_MEMORY;
    }
    wg_spirv_inst *in = &m->v[m->count++];
    *in = (wg_spirv_inst){.at = r->at,
                          .len = pi->num_words,
                          .op = pi->opcode,
                          .result = pi->result_id,
                          .type = pi->type_id,
                          .uses = use_count};
    for (uint16_t k = 0; k < pi->num_operands; k++) {
        spv_operand_type_t t = pi->operands[k].type;
        if (t == SPV_OPERAND_TYPE_ID || t == SPV_OPERAND_TYPE_TYPE_ID ||
            t == SPV_OPERAND_TYPE_SCOPE_ID || t == SPV_OPERAND_TYPE_MEMORY_SEMANTICS_ID)
            m->uses[in->uses + in->use_count++] = r->at + pi->operands[k].offset;
    }
    r->at += pi->num_words;
    return SPV_SUCCESS;
}

cubec_status wg_spirv_parse(const uint32_t *w, size_t n, wg_spirv *out, int *parsed)
{
    *out = (wg_spirv){.w = w, .n = n};
    *parsed = 0;
    reader r = {.m = out, .at = 5};
    spv_context ctx = spvContextCreate(SPV_ENV_UNIVERSAL_1_6);
    if (!ctx) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (SPIR-V parser)");
    spv_result_t res = spvBinaryParse(ctx, &r, w, n, on_header, on_inst, NULL);
    spvContextDestroy(ctx);
    if (r.oom) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (SPIR-V parser)");
    *parsed = res == SPV_SUCCESS;
    return NULL;
}

void wg_spirv_free(wg_spirv *m)
{
    if (!m) return;
    free(m->v);
    free(m->uses);
    *m = (wg_spirv){0};
}
