/* Hazard tracking (see hazards.h). Linear scans: the lists are short (reset at every barrier,
 * capped at HAZARD_CAPACITY), and a scan of a few dozen ranges costs less than a hash would. */
#include "server/hazards.h"

static int overlaps(const hazard_range *a, const hazard_range *b)
{
    return a->page == b->page && a->offset < b->offset + b->size && b->offset < a->offset + a->size;
}

static int any_overlap(const hazard_range *list, uint32_t count, const hazard_range *r)
{
    for (uint32_t i = 0; i < count; i++)
        if (overlaps(&list[i], r)) return 1;
    return 0;
}

int hazard_needs_barrier(const hazard_tracker *t, const hazard_range *ranges, uint32_t n)
{
    if (t->read_count + n > HAZARD_CAPACITY || t->write_count + n > HAZARD_CAPACITY) return 1;
    for (uint32_t i = 0; i < n; i++) {
        if (any_overlap(t->writes, t->write_count, &ranges[i])) return 1;
        if (ranges[i].write && any_overlap(t->reads, t->read_count, &ranges[i])) return 1;
    }
    return 0;
}

void hazard_reset(hazard_tracker *t)
{
    t->read_count = 0;
    t->write_count = 0;
    t->stages = 0;
    t->write_access = 0;
    t->partial_stages = 0;
    t->partial_access = 0;
}

void hazard_note(hazard_tracker *t, const hazard_range *ranges, uint32_t n, uint32_t stages,
                 uint32_t write_access)
{
    t->stages |= stages;
    for (uint32_t i = 0; i < n; i++) {
        if (ranges[i].size == 0) continue;
        if (ranges[i].write) t->write_access |= write_access;
        if (ranges[i].write)
            t->writes[t->write_count++] = ranges[i];
        else
            t->reads[t->read_count++] = ranges[i];
    }
}
