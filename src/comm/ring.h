/* The ring transport (comm/ring.c): collectives as steps between neighbouring ranks over
 * cubec_copy_peer, the path every pair of devices has (host-staged where nothing faster is). */
#ifndef CUBEC_COMM_RING_H
#define CUBEC_COMM_RING_H

#include "comm/comm.h"

extern const comm_transport comm_ring_transport;

#endif
