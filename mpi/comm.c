/* cubec_mpi_comm: creation (the MPI communicator duplicated, the staging slots pinned on the
 * device), its info, the shard split, and destruction. */
#include "comm.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

#define DEFAULT_CHUNK_BYTES (1u << 20)
#define MIN_CHUNK_BYTES 64u

cubec_status mpi_status(int rc, const char *what)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) strcpy(text, "unknown MPI error");
    return cubec_status_new(CUBEC_INTERNAL, "%s: MPI error %d: %s", what, rc, text);
}

/* MPIX_Query_cuda_support() where Open MPI's extension declares it (checked at run time: the
 * header's MPIX_CUDA_AWARE_SUPPORT says only how the library was built). */
static int query_cuda_aware(void)
{
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
    return MPIX_Query_cuda_support() ? 1 : 0;
#else
    return -1;
#endif
}

uint32_t cubec_mpi_dtype_size(cubec_mpi_dtype dtype)
{
    switch (dtype) {
    case CUBEC_MPI_F32: return 4;
    case CUBEC_MPI_F16: return 2;
    case CUBEC_MPI_I32: return 4;
    }
    return 0;
}

static void stages_free(cubec_mpi_comm *m)
{
    for (int i = 0; i < MPI_STAGE_SLOTS; i++) {
        mpi_stage *st = &m->stages[i];
        /* The memory dies with the device anyway; a failure here leaves it to the close. */
        if (st->dev_in) cubec_status_free(cubec_host_free(m->device, st->dev_in));
        if (st->dev_out) cubec_status_free(cubec_host_free(m->device, st->dev_out));
        free(st->wide_in);
        free(st->wide_out);
        free(st->events);
        memset(st, 0, sizeof *st);
    }
}

cubec_status mpi_comm_wide(cubec_mpi_comm *m)
{
    /* f16 chunks of chunk_bytes hold chunk_bytes / 2 elements: twice the bytes in f32. */
    const size_t bytes = (size_t)m->chunk_bytes * 2u * (size_t)m->size;
    for (int i = 0; i < MPI_STAGE_SLOTS; i++) {
        mpi_stage *st = &m->stages[i];
        if (!st->wide_in) st->wide_in = malloc(bytes);
        if (!st->wide_out) st->wide_out = malloc(bytes);
        if (!st->wide_in || !st->wide_out)
            return cubec_status_new(CUBEC_OUT_OF_MEMORY,
                                    "cubec_mpi: f16 staging of %zu bytes: host out of memory",
                                    bytes);
    }
    return NULL;
}

cubec_status cubec_mpi_comm_create(cubec_device *device, MPI_Comm comm,
                                   const cubec_mpi_comm_desc *desc, cubec_mpi_comm **out_comm)
{
    static const char fn[] = "cubec_mpi_comm_create";
    if (!out_comm) return cubec_status_new(CUBEC_INVALID_ARGUMENT, "%s: out_comm is NULL", fn);
    *out_comm = NULL;
    if (!device) return cubec_status_new(CUBEC_INVALID_ARGUMENT, "%s: device is NULL", fn);
    if (comm == MPI_COMM_NULL)
        return cubec_status_new(CUBEC_INVALID_ARGUMENT, "%s: comm is MPI_COMM_NULL", fn);
    uint64_t chunk = DEFAULT_CHUNK_BYTES;
    if (desc) {
        if (desc->struct_size == 0 || desc->struct_size > sizeof(cubec_mpi_comm_desc))
            return cubec_status_new(CUBEC_INVALID_ARGUMENT,
                                    "%s: desc->struct_size = %" PRIu32
                                    " is not a size this library knows (use "
                                    "CUBEC_MPI_COMM_DESC_INIT)",
                                    fn, desc->struct_size);
        if (desc->struct_size >= offsetof(cubec_mpi_comm_desc, chunk_bytes) + 8 &&
            desc->chunk_bytes != 0)
            chunk = desc->chunk_bytes;
    }
    if (chunk < MIN_CHUNK_BYTES || chunk % 4 || chunk > (64ull << 20))
        return cubec_status_new(CUBEC_INVALID_ARGUMENT,
                                "%s: desc->chunk_bytes = %" PRIu64
                                " is not a multiple of 4 from 64 to 64 MiB",
                                fn, chunk);
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized)
        return cubec_status_new(CUBEC_INVALID_ARGUMENT, "%s: MPI_Init has not been called", fn);

    cubec_mpi_comm *m = calloc(1, sizeof *m);
    if (!m) return cubec_status_new(CUBEC_OUT_OF_MEMORY, "%s: host out of memory", fn);
    m->device = device;
    m->chunk_bytes = chunk;
    m->cuda_aware = query_cuda_aware();
    int rc = MPI_Comm_dup(comm, &m->comm);
    if (rc != MPI_SUCCESS) {
        free(m);
        return mpi_status(rc, "cubec_mpi_comm_create: MPI_Comm_dup");
    }
    /* Errors come back as codes, to be returned as statuses, rather than aborting the job. */
    MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(m->comm, &m->rank);
    MPI_Comm_size(m->comm, &m->size);

    cubec_status err = NULL;
    const uint64_t bytes = chunk * (uint64_t)m->size;
    for (int i = 0; i < MPI_STAGE_SLOTS && !err; i++) {
        mpi_stage *st = &m->stages[i];
        err = cubec_host_alloc(device, bytes, &st->dev_in);
        if (!err) err = cubec_host_alloc(device, bytes, &st->dev_out);
        if (!err) {
            st->events = calloc((size_t)m->size, sizeof(cubec_event *));
            if (!st->events)
                err = cubec_status_new(CUBEC_OUT_OF_MEMORY, "%s: host out of memory", fn);
        }
        if (!err) m->staging_bytes += 2 * bytes;
    }
    /* Every rank learns whether every rank could make its staging, so none is left waiting in a
     * collective its peer will never call. */
    int ok = err == NULL, all_ok = 0;
    rc = MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, m->comm);
    if (!err && rc != MPI_SUCCESS) err = mpi_status(rc, "cubec_mpi_comm_create: MPI_Allreduce");
    if (!err && !all_ok)
        err = cubec_status_new(CUBEC_INVALID_ARGUMENT,
                               "%s: another rank could not make its communicator (see its error)",
                               fn);
    if (err) {
        stages_free(m);
        MPI_Comm_free(&m->comm);
        free(m);
        return err;
    }
    *out_comm = m;
    return NULL;
}

void cubec_mpi_comm_destroy(cubec_mpi_comm *m)
{
    if (!m) return;
    stages_free(m);
    MPI_Comm_free(&m->comm);
    free(m);
}

cubec_status cubec_mpi_comm_get_info(const cubec_mpi_comm *m, cubec_mpi_comm_info *out_info)
{
    static const char fn[] = "cubec_mpi_comm_get_info";
    if (!m) return cubec_status_new(CUBEC_INVALID_ARGUMENT, "%s: comm is NULL", fn);
    if (!out_info) return cubec_status_new(CUBEC_INVALID_ARGUMENT, "%s: out_info is NULL", fn);
    if (out_info->struct_size < 4 || out_info->struct_size > sizeof(cubec_mpi_comm_info))
        return cubec_status_new(CUBEC_INVALID_ARGUMENT,
                                "%s: out_info->struct_size = %" PRIu32
                                " is not a size this library knows (use CUBEC_MPI_COMM_INFO_INIT)",
                                fn, out_info->struct_size);
    cubec_mpi_comm_info info = CUBEC_MPI_COMM_INFO_INIT;
    info.rank = m->rank;
    info.size = m->size;
    info.chunk_bytes = m->chunk_bytes;
    info.cuda_aware = m->cuda_aware;
    info.staging_bytes = m->staging_bytes;
    /* Only the bytes the caller declared ("Structs that grow"). */
    const uint32_t declared = out_info->struct_size;
    memcpy((char *)out_info + 4, (const char *)&info + 4, declared - 4);
    return NULL;
}

cubec_status cubec_mpi_shard(const cubec_mpi_comm *m, uint64_t total, int rank,
                             uint64_t *out_offset, uint64_t *out_count)
{
    static const char fn[] = "cubec_mpi_shard";
    if (!m) return cubec_status_new(CUBEC_INVALID_ARGUMENT, "%s: comm is NULL", fn);
    if (!out_offset || !out_count)
        return cubec_status_new(CUBEC_INVALID_ARGUMENT, "%s: out_offset or out_count is NULL", fn);
    if (rank < 0 || rank >= m->size)
        return cubec_status_new(CUBEC_INVALID_ARGUMENT,
                                "%s: rank = %d is not a rank of the communicator (size %d)", fn,
                                rank, m->size);
    const uint64_t size = (uint64_t)m->size, base = total / size, extra = total % size;
    const uint64_t r = (uint64_t)rank;
    *out_count = base + (r < extra ? 1 : 0);
    *out_offset = r * base + (r < extra ? r : extra);
    return NULL;
}
