/* A fake page source for the memory pool and memory manager tests, and the small helpers those
 * tests share. The source hands out heap-allocated fake_page records instead of device memory, so
 * the tests can check every page against a ledger, catch double or foreign frees, and make
 * allocation fail on demand the ways a driver can (a chosen error from the Nth call on, or a full
 * heap). */
#ifndef CUBEC_TEST_FAKE_PAGE_SOURCE_H
#define CUBEC_TEST_FAKE_PAGE_SOURCE_H

#include "memory/page_source.h"

#include <stdint.h>

typedef struct fake_page {
    uint64_t size;
    uint32_t id;
    int live;
    int pool; /* tagged by the test the first time an allocation lands in it; -1 before */
} fake_page;

/* Zero-initialise (`fake_source f = {0};`), then set the failure fields before use. */
typedef struct fake_source {
    fake_page **pages; /* every page ever handed out, freed ones kept to catch double frees */
    uint32_t count;
    uint32_t cap;
    uint64_t alloc_calls;
    uint64_t free_calls;
    uint64_t live_bytes;
    uint32_t live_pages;
    uint64_t fail_at;    /* 1-based alloc call from which calls fail; 0: never */
    uint64_t fail_count; /* how many calls fail from fail_at */
    cubec_code fail_code;
    uint64_t capacity; /* refuse when live bytes would exceed this; 0: no limit */
    uint64_t last_size;
    uint32_t last_flags; /* the flags of the last alloc call */
} fake_source;

/* The page_source callbacks; `user` is the fake_source. Exposed so that a test can build a
 * source with one of them missing. */
cubec_status fake_alloc(void *user, uint64_t size, uint32_t flags, void **out_page);
void fake_free(void *user, void *page);

page_source fake_page_source(fake_source *f);
/* Frees the ledger (not the pool's job: pages still live are simply dropped). */
void fake_destroy(fake_source *f);

/* xorshift64*: a fixed seed makes every random test reproducible. The state starts at a fixed
 * value in each test program; tests that want their own sequence assign rng_state. */
extern uint64_t rng_state;
uint64_t rng_next(void);
uint64_t rng_range(uint64_t lo, uint64_t hi); /* inclusive */

/* Fails the test with the status message if `s` is an error. */
void ok(cubec_status s);

/* Rounds up by division, so that the tests' models do not reuse mem_align_up, the arithmetic they
 * check. */
uint64_t align_up(uint64_t v, uint64_t a);

#endif
