/* cubec_flush, cubec_sync and cubec_check of a buffer (server/sync.c). */
#ifndef CUBEC_SERVER_SYNC_H
#define CUBEC_SERVER_SYNC_H

#include "server/buffers.h"
#include "server/streams.h"

/* cubec_flush: the stream's queue and whatever transfers recorded, submitted. */
MUST_USE cubec_status server_flush(cubec_device *d, stream_ref s);
/* cubec_sync: the stream's work submitted and finished, its writes visible to the host. */
MUST_USE cubec_status server_sync(cubec_device *d, stream_ref s);
/* cubec_check of one buffer: its queued work recorded, then its failure (or NULL). */
MUST_USE cubec_status server_check_buffer(cubec_device *d, const buffer_obj *b);

#endif
