/* naga's refusals recognised after the fact (wg_naga_refusals.h): the module read once
 * (wg_spirv_parse.h) for the constructs of known limits. */
#include "gpu/webgpu/wg_naga_refusals.h"

#include "gpu/webgpu/wg_spirv_parse.h"

#include <stdlib.h>
#include <string.h>

enum { OP_ATOMIC_COMPARE_EXCHANGE = 230 };

/* naga's message for an expression no Emit statement covers, as naga 29 words it. */
static const char not_in_scope[] = "introduced into the scope";

/* How many OpAtomicCompareExchange of the module have a result some instruction uses. */
static uint32_t used_compare_exchanges(const wg_spirv *m)
{
    uint32_t bound = m->n >= 5 ? m->w[3] : 0, count = 0;
    unsigned char *used = bound ? calloc(bound, 1) : NULL;
    if (!used) return 0;
    for (size_t i = 0; i < m->count; i++)
        for (uint32_t k = 0; k < m->v[i].use_count; k++) {
            uint32_t id = wg_spirv_use(m, &m->v[i], k);
            if (id < bound) used[id] = 1;
        }
    for (size_t i = 0; i < m->count; i++)
        if (m->v[i].op == OP_ATOMIC_COMPARE_EXCHANGE && m->v[i].result < bound &&
            used[m->v[i].result])
            count++;
    free(used);
    return count;
}

cubec_status wg_naga_explain(const uint32_t *w, size_t n, cubec_status refusal)
{
    if (!refusal || !w || !strstr(cubec_status_message(refusal), not_in_scope)) return refusal;
    wg_spirv m;
    int parsed = 0;
    cubec_status err = wg_spirv_parse(w, n, &m, &parsed);
    uint32_t count = !err && parsed ? used_compare_exchanges(&m) : 0;
    cubec_status explained = NULL;
    if (count)
        explained = status_make(
            CUBEC_UNSUPPORTED,
            "uses what %u OpAtomicCompareExchange instruction%s (GLSL's atomicCompSwap) return%s, "
            "which naga's SPIR-V front end cannot translate: it never emits the old value an "
            "exchange returns (gfx-rs/wgpu#9621, fixed after naga 29). naga said: %s",
            count, count == 1 ? "" : "s", count == 1 ? "s" : "", cubec_status_message(refusal));
    wg_spirv_free(&m);
    cubec_status_free(err);
    if (!explained) return refusal;
    cubec_status_free(refusal);
    return explained;
}
