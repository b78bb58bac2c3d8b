/* The lost-device state (server/health.c): checked before work, set by the errors that lose
 * the device. */
#ifndef CUBEC_SERVER_HEALTH_H
#define CUBEC_SERVER_HEALTH_H

#include "base/status.h"
#include "cubec/cubec.h"

typedef struct cubec_device_s cubec_device;

/* An error naming the earlier loss when the device was lost, else NULL. */
MUST_USE cubec_status server_check_alive(cubec_device *d);
/* Marks the device lost when `err` says so; returns err. */
MUST_USE cubec_status server_note_error(cubec_device *d, cubec_status err);

#endif
