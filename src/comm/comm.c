/* What every transport of the collectives shares (comm/comm.h): element sizes, the shard rule,
 * and the list of transports a communicator tries at creation. */
#include "comm/comm.h"

#include "comm/nccl_transport.h"
#include "comm/ring.h"

uint32_t comm_dtype_size(cubec_dtype dtype)
{
    switch (dtype) {
    case CUBEC_DTYPE_F32: return 4;
    case CUBEC_DTYPE_F16: return 2;
    case CUBEC_DTYPE_I32: return 4;
    }
    return 0;
}

uint64_t comm_bytes_for(cubec_dtype dtype, uint64_t elems)
{
    return (elems * comm_dtype_size(dtype) + 3) / 4 * 4;
}

void comm_shard(uint32_t n, uint64_t total, uint32_t rank, uint64_t *offset, uint64_t *count)
{
    const uint64_t base = total / n, extra = total % n, r = rank;
    *count = base + (r < extra ? 1 : 0);
    *offset = r * base + (r < extra ? r : extra);
}

const comm_transport *const *comm_transports(uint32_t *out_count)
{
    /* First that serves the devices wins: NCCL where it opens (comm/nccl_transport.c), else the
     * ring, which serves any devices with a path between every pair. */
    static const comm_transport *const list[] = {&comm_nccl_transport, &comm_ring_transport};
    *out_count = sizeof list / sizeof list[0];
    return list;
}
