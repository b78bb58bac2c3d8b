/* comm_move (comm_move.h): the element kernels, compiled per device and dtype at first use, and
 * the choice between a plain peer copy and a copy into scratch followed by a kernel. */
#include "comm/comm_move.h"

#include "base/device_registry.h"
#include "base/status.h"

#include <stdlib.h>
#include <string.h>

enum { WORKGROUP = 256, MAX_GROUPS = 65535 };

/* Each invocation owns whole words of dst (grid-stride over the words the range touches), so two
 * invocations never write one word; the elements of a word outside the range keep their bits.
 * HALF: two binary16 elements a word, element j in bits 16 * (j & 1). Copies move bits without
 * arithmetic (NaN payloads and subnormals intact); reductions of f16 widen both operands to f32,
 * reduce and round once (packHalf2x16). op: 0 copy, 1 sum, 2 max. b_is_dst: the local operand
 * is dst itself (in place, b_off == dst_off), read before the word is written back. */
static const char element_src[] =
    "#version 450\n"
    "layout(local_size_x = 256) in;\n"
    "layout(std430, set = 0, binding = 0) buffer Dst { uint dst[]; };\n"
    "layout(std430, set = 0, binding = 1) readonly buffer A { uint a[]; };\n"
    "layout(std430, set = 0, binding = 2) readonly buffer B { uint b[]; };\n"
    "CUBEC_INFO(uint dst_off; uint a_off; uint b_off; uint count; uint op; uint b_is_dst;)\n"
    "#if KIND == 2\n"
    "const uint E = 2u;\n"
    "uint half_of(uint w, uint j) { return (w >> ((j & 1u) * 16u)) & 0xffffu; }\n"
    "uint elem_a(uint j) { return half_of(a[j >> 1], j); }\n"
    "uint elem_b(uint j) { return half_of(info.b_is_dst != 0u ? dst[j >> 1] : b[j >> 1], j); }\n"
    "uint combine(uint x, uint y) {\n"
    "    float fx = unpackHalf2x16(x).x, fy = unpackHalf2x16(y).x;\n"
    "    return packHalf2x16(vec2(info.op == 1u ? fx + fy : max(fx, fy), 0.0)) & 0xffffu;\n"
    "}\n"
    "#else\n"
    "const uint E = 1u;\n"
    "uint elem_a(uint j) { return a[j]; }\n"
    "uint elem_b(uint j) { return info.b_is_dst != 0u ? dst[j] : b[j]; }\n"
    "#if KIND == 1\n"
    "uint combine(uint x, uint y) {\n"
    "    float fx = uintBitsToFloat(x), fy = uintBitsToFloat(y);\n"
    "    return floatBitsToUint(info.op == 1u ? fx + fy : max(fx, fy));\n"
    "}\n"
    "#else\n"
    "uint combine(uint x, uint y) {\n"
    "    return info.op == 1u ? x + y : uint(max(int(x), int(y)));\n"
    "}\n"
    "#endif\n"
    "#endif\n"
    "void main() {\n"
    "    uint first = info.dst_off / E, last = (info.dst_off + info.count - 1u) / E;\n"
    "    uint stride = gl_NumWorkGroups.x * 256u;\n"
    "    for (uint w = first + gl_GlobalInvocationID.x; w <= last; w += stride) {\n"
    "        uint word = (E == 1u && info.b_is_dst == 0u) ? 0u : dst[w];\n"
    "        for (uint h = 0u; h < E; h++) {\n"
    "            uint e = w * E + h;\n"
    "            if (e < info.dst_off || e - info.dst_off >= info.count) continue;\n"
    "            uint i = e - info.dst_off;\n"
    "            uint x = elem_a(info.a_off + i);\n"
    "            if (info.op != 0u) x = combine(x, elem_b(info.b_off + i));\n"
    "            word = E == 1u ? x : (word & ~(0xffffu << (h * 16u))) | (x << (h * 16u));\n"
    "        }\n"
    "        dst[w] = word;\n"
    "    }\n"
    "}\n";

static cubec_status element_kernel(cubec_comm *c, uint32_t rank, cubec_dtype dtype,
                                   cubec_kernel *out)
{
    static const char *const names[COMM_DTYPES] = {
        NULL, "cubec_comm_elements_f32", "cubec_comm_elements_f16", "cubec_comm_elements_i32"};
    static const char *const kinds[COMM_DTYPES] = {NULL, "1", "2", "3"};
    pthread_mutex_lock(&c->lock);
    cubec_status err = NULL;
    cubec_kernel *k = &c->kernels[rank * COMM_DTYPES + (uint32_t)dtype];
    if (!k->id) {
        cubec_define def = {"KIND", kinds[dtype]};
        cubec_kernel_desc desc = CUBEC_KERNEL_DESC_INIT;
        desc.name = names[dtype];
        desc.glsl = element_src;
        desc.defines = &def;
        desc.define_count = 1;
        err = cubec_kernel_create(c->devices[rank], &desc, k);
    }
    *out = *k;
    pthread_mutex_unlock(&c->lock);
    return err;
}

void comm_kernels_destroy(cubec_comm *c)
{
    for (uint32_t r = 0; r < c->n; r++)
        for (uint32_t t = 0; t < COMM_DTYPES; t++) {
            cubec_kernel k = c->kernels[r * COMM_DTYPES + t];
            /* A device closed first took its kernels with it. */
            if (k.id && device_registry_is_open(c->devices[r]))
                cubec_status_free(cubec_kernel_destroy(c->devices[r], k));
        }
}

cubec_status comm_move(cubec_comm *c, const comm_call *call, comm_end src, comm_end dst,
                       uint64_t count, cubec_reduce_op op, comm_end local)
{
    if (count == 0) return NULL;
    const uint32_t esize = comm_dtype_size(call->dtype), per_word = 4 / esize;
    cubec_device *sd = c->devices[src.rank], *dd = c->devices[dst.rank];
    const cubec_stream ss = call->streams[src.rank], ds = call->streams[dst.rank];
    /* Whole words copied as they are: the peer copy alone. */
    if (op == 0 && src.elem % per_word == 0 && dst.elem % per_word == 0 && count % per_word == 0)
        return cubec_copy_peer(sd, ss, src.buf, src.elem * esize, dd, ds, dst.buf, dst.elem * esize,
                               count * esize);
    cubec_buffer a = src.buf, scratch = {0};
    uint64_t a_off = src.elem;
    if (src.rank != dst.rank || src.buf.id == dst.buf.id) {
        /* The words that cover the source range, into scratch on the receiving device. */
        const uint64_t w0 = src.elem / per_word, w1 = (src.elem + count - 1) / per_word;
        RETURN_IF_ERROR(cubec_buffer_create(dd, ds, (w1 - w0 + 1) * 4, &scratch));
        cubec_status err =
            cubec_copy_peer(sd, ss, src.buf, w0 * 4, dd, ds, scratch, 0, (w1 - w0 + 1) * 4);
        if (err) {
            cubec_status_free(cubec_buffer_release(dd, scratch));
            return err;
        }
        a = scratch;
        a_off = src.elem - w0 * per_word;
    }
    cubec_kernel k;
    cubec_status err = element_kernel(c, dst.rank, call->dtype, &k);
    if (!err) {
        const int in_place = op != 0 && local.buf.id == dst.buf.id;
        struct {
            uint32_t dst_off, a_off, b_off, count, op, b_is_dst;
        } info = {(uint32_t)dst.elem, (uint32_t)a_off, (uint32_t)local.elem,
                  (uint32_t)count,    (uint32_t)op,    (uint32_t)in_place};
        /* Binding 2 is read only for an out-of-place reduction; otherwise it repeats the source,
         * which the kernel does not read through it. */
        cubec_buffer bound[3] = {dst.buf, a, op != 0 && !in_place ? local.buf : a};
        const uint64_t words = (dst.elem + count - 1) / per_word - dst.elem / per_word + 1;
        const uint64_t groups = (words + WORKGROUP - 1) / WORKGROUP;
        cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
        ld.kernel = k;
        ld.buffers = bound;
        ld.buffer_count = 3;
        ld.info = &info;
        ld.info_size = sizeof info;
        ld.groups[0] = groups < MAX_GROUPS ? (uint32_t)groups : MAX_GROUPS;
        ld.groups[1] = ld.groups[2] = 1;
        err = cubec_launch(dd, ds, &ld);
    }
    /* Queued work holds the scratch until it has run. */
    if (scratch.id) {
        cubec_status rel = cubec_buffer_release(dd, scratch);
        if (err)
            cubec_status_free(rel);
        else
            err = rel;
    }
    return err;
}
