/* Whether the device still works: the lost-device state every component checks before it uses
 * the GPU and sets when an error says the device is gone. It calls nothing in the server, so the
 * bottom of the server (submission) can report to it without calling up into the device. */
#include "server/health.h"
#include "base/log.h"
#include "server/device.h"

#include <stdio.h>

cubec_status server_check_alive(cubec_device *d)
{
    if (d->lost)
        return status_make(CUBEC_DEVICE_LOST,
                           "the device was lost earlier (%s); close it and open a new one",
                           d->lost_reason);
    return NULL;
}

cubec_status server_note_error(cubec_device *d, cubec_status err)
{
    cubec_code code = cubec_status_code(err);
    if (code == CUBEC_TIMEOUT) d->hung = 1;
    if ((code == CUBEC_DEVICE_LOST || code == CUBEC_TIMEOUT) && !d->lost) {
        d->lost = 1;
        /* Later calls name the root cause, which may have struck on the submission thread. */
        snprintf(d->lost_reason, sizeof d->lost_reason, "%s", cubec_status_message(err));
        LOG(LOG_ERROR, LOG_SYS_DEVICE, "device lost: %s", cubec_status_message(err));
    }
    return err;
}
