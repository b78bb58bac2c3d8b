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

/* Rank `rank`'s element kernel of `dtype`, and its device's binding limits, read at first use. */
static cubec_status element_kernel(cubec_comm *c, uint32_t rank, cubec_dtype dtype,
                                   cubec_kernel *out)
{
    static const char *const names[COMM_DTYPES] = {
        NULL, "cubec_comm_elements_f32", "cubec_comm_elements_f16", "cubec_comm_elements_i32"};
    static const char *const kinds[COMM_DTYPES] = {NULL, "1", "2", "3"};
    pthread_mutex_lock(&c->lock);
    cubec_status err = NULL;
    if (!c->max_range[rank]) {
        cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
        err = cubec_device_get_info(c->devices[rank], &info);
        if (!err) {
            c->max_range[rank] = info.max_storage_buffer_range;
            c->view_align[rank] =
                info.storage_offset_alignment > 4 ? info.storage_offset_alignment : 4;
        }
    }
    cubec_kernel *k = &c->kernels[rank * COMM_DTYPES + (uint32_t)dtype];
    if (!err && !k->id) {
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

/* A view of `buf` over the words that hold elements [elem, elem + count), starting at a multiple
 * of `align`; *out_off is elem's index within the view. */
static cubec_status view_of(cubec_device *d, cubec_buffer buf, uint64_t elem, uint64_t count,
                            uint32_t esize, uint64_t align, cubec_buffer *out_view,
                            uint32_t *out_off)
{
    const uint32_t per_word = 4 / esize;
    const uint64_t start = elem / per_word * 4 / align * align;
    const uint64_t end = ((elem + count - 1) / per_word + 1) * 4;
    RETURN_IF_ERROR(cubec_buffer_view(d, buf, start, end - start, out_view));
    *out_off = (uint32_t)(elem - start / esize);
    return NULL;
}

/* One launch of the element kernel over `count` elements: dst[i] = a[i] (op 0) or a[i] op b[i],
 * b being dst itself where in_place. Each buffer bound as a view of the words the range touches,
 * so a range of a buffer larger than one binding may span is bound all the same. */
static cubec_status launch_piece(cubec_comm *c, uint32_t rank, cubec_stream s, cubec_kernel k,
                                 const comm_call *call, comm_end dst, cubec_buffer a,
                                 uint64_t a_elem, cubec_buffer b, uint64_t b_elem, uint64_t count,
                                 cubec_reduce_op op, int in_place)
{
    cubec_device *d = c->devices[rank];
    const uint32_t esize = comm_dtype_size(call->dtype), per_word = 4 / esize;
    const uint64_t align = c->view_align[rank];
    cubec_buffer views[3] = {{0}, {0}, {0}};
    struct {
        uint32_t dst_off, a_off, b_off, count, op, b_is_dst;
    } info = {0, 0, 0, (uint32_t)count, (uint32_t)op, (uint32_t)in_place};
    cubec_status err = view_of(d, dst.buf, dst.elem, count, esize, align, &views[0], &info.dst_off);
    if (!err) err = view_of(d, a, a_elem, count, esize, align, &views[1], &info.a_off);
    /* Binding 2 is read only for an out-of-place reduction; otherwise it repeats the source,
     * which the kernel does not read through it. */
    if (!err && op != 0 && !in_place)
        err = view_of(d, b, b_elem, count, esize, align, &views[2], &info.b_off);
    if (in_place) info.b_off = info.dst_off;
    if (!err) {
        cubec_buffer bound[3] = {views[0], views[1], views[2].id ? views[2] : views[1]};
        /* The words the dst range touches, relative to its view: what the invocations share. */
        const uint64_t words = (info.dst_off + count - 1) / per_word - info.dst_off / per_word + 1;
        const uint64_t groups = (words + WORKGROUP - 1) / WORKGROUP;
        cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
        ld.kernel = k;
        ld.buffers = bound;
        ld.buffer_count = 3;
        ld.info = &info;
        ld.info_size = sizeof info;
        ld.groups[0] = groups < MAX_GROUPS ? (uint32_t)groups : MAX_GROUPS;
        ld.groups[1] = ld.groups[2] = 1;
        err = cubec_launch(d, s, &ld);
    }
    /* Queued work holds the views until it has run. */
    for (int i = 0; i < 3; i++)
        if (views[i].id) cubec_status_free(cubec_buffer_release(d, views[i]));
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
    const int in_place = op != 0 && local.buf.id == dst.buf.id;
    /* Pieces of at most half a binding's span (64 MiB at most): each view then fits one binding
     * whatever its alignment. */
    uint64_t piece_bytes = c->max_range[dst.rank] / 2;
    if (piece_bytes > (64u << 20)) piece_bytes = 64u << 20;
    const uint64_t piece = piece_bytes / 4 * per_word;
    for (uint64_t done = 0; done < count && !err; done += piece) {
        const uint64_t m = count - done < piece ? count - done : piece;
        comm_end d_piece = {dst.rank, dst.buf, dst.elem + done};
        err = launch_piece(c, dst.rank, ds, k, call, d_piece, a, a_off + done, local.buf,
                           local.elem + done, m, op, in_place);
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
