/* The NCCL transport of the collectives within a process (comm/nccl_transport.c): tried before
 * the ring by comm_transports(). */
#ifndef CUBEC_COMM_NCCL_TRANSPORT_H
#define CUBEC_COMM_NCCL_TRANSPORT_H

#include "comm/comm.h"

extern const comm_transport comm_nccl_transport;

/* 1 when every buffer the call reads or writes, on every rank, can be mapped into CUDA (made by
 * cubec_buffer_create_exportable): the calls NCCL takes; the others go through the ring. */
int comm_nccl_call_exportable(const cubec_comm *comm, const comm_call *call);

#endif
