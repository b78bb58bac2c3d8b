/* The communicator of cubec_mpi (comm.c): the duplicated MPI communicator, the device, and the
 * staging slots the pipelines of collectives.c move chunks through. */
#ifndef CUBEC_MPI_COMM_H
#define CUBEC_MPI_COMM_H

#include <cubec/cubec_mpi.h>

/* Chunks in flight: one read from the device, one in MPI, one written back. */
#define MPI_STAGE_SLOTS 3

/* One chunk's place in the pipeline. dev_in and dev_out are pinned (cubec_host_alloc), so the
 * device reads and writes them directly; wide_in and wide_out hold f16 data widened to f32 for
 * MPI (plain memory, made at the first f16 reduction). Each holds `size` ranks' chunks. */
typedef struct mpi_stage {
    void *dev_in, *dev_out;
    float *wide_in, *wide_out;
    cubec_event **events; /* the chunk's reads: one per rank at most */
    uint32_t event_count;
    int flag_in, flag_out;   /* the taint flag exchanged with the chunk (collectives.c) */
    MPI_Request requests[2]; /* the chunk's data and its flag */
} mpi_stage;

struct cubec_mpi_comm_s {
    cubec_device *device;
    MPI_Comm comm;
    int rank, size;
    int cuda_aware;
    uint64_t chunk_bytes;
    uint64_t staging_bytes;
    mpi_stage stages[MPI_STAGE_SLOTS];
};

/* The f32 staging of every slot, made on first use. */
cubec_status mpi_comm_wide(cubec_mpi_comm *m);
/* A status for an MPI error code: "<what>: <MPI's error string>". */
cubec_status mpi_status(int rc, const char *what);

#endif
