/* The NCCL transport of the collectives within a process (docs/multi-device.md, "The NCCL
 * transport"): a comm_transport over interop/nccl_collectives.h's group, one NCCL rank per cubec
 * device.
 *
 * Chosen at cubec_comm_create when the communicator has two ranks or more (one rank has nothing
 * to exchange: the ring does nothing for it, NCCL would still need CUDA) and nccl_group_open
 * accepts its devices: libnccl and libcuda load, every device is a CUDA device, no two are one
 * GPU. Otherwise its refusal is kept as the reason (cubec_comm_info.transport_reason) and the
 * ring is tried next.
 *
 * Per call, NCCL reads and writes the buffers through CUDA, which can map only exportable
 * buffers (cubec_buffer_create_exportable). A collective whose every buffer is exportable goes
 * to NCCL; any other goes through the ring for that call alone, with the same results and the
 * same ordering on the streams, so a communicator serves every buffer and the caller chooses
 * NCCL's speed by how buffers are made. */
#include "comm/nccl_transport.h"

#include "api/api_peer_cuda.h"
#include "comm/ring.h"
#include "interop/nccl_collectives.h"

int comm_nccl_call_exportable(const cubec_comm *comm, const comm_call *call)
{
    for (uint32_t r = 0; r < comm->n; r++) {
        if (!api_buffer_exportable(comm->devices[r], call->in[r])) return 0;
        if (call->out != call->in && !api_buffer_exportable(comm->devices[r], call->out[r]))
            return 0;
    }
    return 1;
}

static cubec_status nccl_open(cubec_comm *comm, void **out_state)
{
    *out_state = NULL;
    if (comm->n < 2)
        return status_make(CUBEC_UNSUPPORTED,
                           "a communicator of %u rank has nothing to exchange: the ring serves "
                           "it",
                           comm->n);
    nccl_group *g = NULL;
    RETURN_IF_ERROR(nccl_group_open(comm->devices, comm->n, &g));
    *out_state = g;
    return NULL;
}

static void nccl_close(cubec_comm *comm, void *state)
{
    (void)comm;
    nccl_group_close(state);
}

static cubec_status nccl_run(cubec_comm *comm, void *state, const comm_call *call)
{
    if (!comm_nccl_call_exportable(comm, call)) return comm_ring_transport.run(comm, NULL, call);
    nccl_group *g = state;
    switch (call->kind) {
    case COMM_ALL_REDUCE:
        return nccl_group_all_reduce(g, call->in, call->streams, call->count, call->dtype,
                                     call->op);
    case COMM_BROADCAST:
        return nccl_group_broadcast(g, call->in, call->streams, call->count, call->dtype,
                                    call->root);
    case COMM_ALL_GATHER:
        return nccl_group_all_gather(g, call->in, call->out, call->streams, call->count,
                                     call->dtype);
    case COMM_REDUCE_SCATTER:
        return nccl_group_reduce_scatter(g, call->in, call->out, call->streams, call->count,
                                         call->dtype, call->op);
    }
    return status_make(CUBEC_INVALID_ARGUMENT, "nccl transport: collective kind %d",
                       (int)call->kind);
}

const comm_transport comm_nccl_transport = {"nccl", nccl_open, nccl_close, nccl_run};
