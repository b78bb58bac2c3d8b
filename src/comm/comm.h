/* The communicator of collectives within a process (cubec_comm, cubec.h) and the seam between
 * its public entry points (src/api/api_comm.c: argument checks) and the transports that move and
 * reduce the data: a collective reaches its transport as one comm_call whose every argument has
 * been checked. The transports: NCCL (comm/nccl_transport.c) where it opens, else the ring over
 * peer copies (comm/ring.c); comm_transports() lists them in the order they are tried. */
#ifndef CUBEC_COMM_COMM_H
#define CUBEC_COMM_COMM_H

#include <cubec/cubec.h>

#include <pthread.h>

typedef enum comm_kind {
    COMM_ALL_REDUCE,
    COMM_BROADCAST,
    COMM_ALL_GATHER,
    COMM_REDUCE_SCATTER,
} comm_kind;

/* One collective, checked: in[r] and out[r] are rank r's buffers (the one buffer twice for
 * all-reduce and broadcast), streams[r] its stream; count is the elements of all-reduce and
 * broadcast, the total of all-gather and reduce-scatter. op is 0 where the kind reduces nothing,
 * root 0 where it has none. */
typedef struct comm_call {
    comm_kind kind;
    const cubec_buffer *in, *out;
    const cubec_stream *streams;
    uint64_t count;
    cubec_dtype dtype;
    cubec_reduce_op op;
    uint32_t root;
} comm_call;

typedef struct comm_transport {
    const char *name;
    /* Whether the transport serves the communicator's devices: NULL and its state (may be NULL)
     * in *out_state, or the reason it does not (the next transport is tried). */
    cubec_status (*open)(cubec_comm *comm, void **out_state);
    void (*close)(cubec_comm *comm, void *state);
    /* Queues the collective on the streams; never waits for a device. */
    cubec_status (*run)(cubec_comm *comm, void *state, const comm_call *call);
} comm_transport;

/* Element kernels of one device, by dtype (comm/comm_move.c). */
enum { COMM_DTYPES = 4 /* indexed by cubec_dtype */ };

struct cubec_comm_s {
    uint32_t n;
    cubec_device **devices;
    const comm_transport *transport;
    void *transport_state;
    /* Why the transports before `transport` refused (cubec_comm_info.transport_reason). */
    char transport_reason[256];
    /* kernels[r * COMM_DTYPES + dtype]: rank r's element kernel of dtype, compiled at its first
     * use (id 0: not yet); the lock keeps two threads from compiling one twice. */
    pthread_mutex_t lock;
    cubec_kernel *kernels;
    /* Per rank, read with its first kernel: the bytes one binding may span and the alignment of
     * a view's offset (0: not read yet). Large ranges are bound as views, in pieces. */
    uint64_t *max_range, *view_align;
};

/* The transports in the order a communicator tries them. */
const comm_transport *const *comm_transports(uint32_t *out_count);

/* Bytes of one element of dtype (2 or 4); 0 for a value that is not a cubec_dtype. */
uint32_t comm_dtype_size(cubec_dtype dtype);
/* Bytes a buffer needs to hold `elems` elements of dtype: whole 4-byte words. */
uint64_t comm_bytes_for(cubec_dtype dtype, uint64_t elems);
/* cubec_comm_shard's rule, unchecked. */
void comm_shard(uint32_t n, uint64_t total, uint32_t rank, uint64_t *offset, uint64_t *count);

#endif
