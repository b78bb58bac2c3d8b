/* The autotuner (spec 9, cubec.h "Autotuning", docs/autotune.md): picks the fastest of a key's
 * candidates by measuring them with profiles, and remembers the choice in memory and in the
 * disk cache of compiled kernels, so that later processes on the same device reuse it.
 *
 * It is a client of the public API (profiles, syncs, the candidates' own launches) and takes the
 * device lock only to read what names the device on disk and to check the stream. A tuner's own
 * mutex makes its calls take turns: two threads asking for one key measure it once. Candidates
 * run while that mutex is held, so a candidate that called its own tuner would wait for itself;
 * a thread-local list of the tuners measuring on this thread refuses that call instead (the one
 * piece of per-thread state here).
 *
 * Nothing read from disk is trusted: the disk cache checks the file (checksums, key, version)
 * and this module checks the payload (its format, the candidate count, the winner's name, the
 * caller's checksum); whatever does not match is measured again and stored over. */
#include "tune/autotune.h"

#include "api/api_common.h"
#include "api/api_struct.h"
#include "base/hash.h"
#include "base/log.h"
#include "base/strfmt.h"
#include "server/kernel_disk.h"
#include "server/streams.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_WARMUP 2u
#define DEFAULT_SAMPLES 10u
#define MAX_WARMUP 1000u

/* A choice remembered in memory: valid for a request with the same candidate count, checksum
 * and winner's name. */
typedef struct choice {
    char *key;
    uint64_t key_hash;
    uint64_t checksum;
    uint32_t count, index;
    char *name;
    uint64_t median_ns;
} choice;

struct cubec_tuner_s {
    cubec_device *device;
    char name[CUBEC_TUNE_MAX_NAME_BYTES + 1];
    uint32_t warmup, samples;
    int memory_only;
    pthread_mutex_t lock;
    /* What the stored choices are valid for, read at creation (immutable in the device). */
    char namespace_[1024];
    char cache_dir[448];
    uint64_t cache_max_bytes;
    disk_cache *disk; /* NULL: none (yet, or off) */
    int disk_checked;
    choice *choices; /* linear: a tuner knows tens of keys, and measuring costs far more */
    uint32_t choice_count, choice_cap;
    cubec_tune_outcome *outcomes; /* of the last cubec_tune_choose */
    uint32_t outcome_count;
    /* Threads inside cubec_tune_choose or cubec_tune_outcome_get (waiting for `lock` included):
     * cubec_tuner_destroy refuses while any is, rather than free what they use. */
    _Atomic uint32_t users;
};

/* The tuners measuring on this thread, innermost first (a candidate may use another tuner). */
typedef struct tuning_frame {
    const cubec_tuner *tuner;
    const struct tuning_frame *outer;
} tuning_frame;
static _Thread_local const tuning_frame *tuning_now;

static int measuring_here(const cubec_tuner *t)
{
    for (const tuning_frame *f = tuning_now; f; f = f->outer)
        if (f->tuner == t) return 1;
    return 0;
}

static cubec_status reentered(const cubec_tuner *t, const char *fn)
{
    return INVALID_ARG("%s: a candidate of tuner '%s' called that tuner while it measured (it "
                       "would wait for itself)",
                       fn, t->name);
}

/* ---- creation ---------------------------------------------------------------------------- */

cubec_status cubec_tuner_create(cubec_device *device, const cubec_tuner_desc *user,
                                cubec_tuner **out_tuner)
{
    if (!out_tuner) return INVALID_ARG("cubec_tuner_create: out_tuner is NULL");
    *out_tuner = NULL;
    RETURN_IF_ERROR(api_device(device, "cubec_tuner_create"));
    if (!user) return INVALID_ARG("cubec_tuner_create: desc is NULL");
    RETURN_IF_ERROR(API_STRUCT_CHECK(user, cubec_tuner_desc, CUBEC_TUNER_DESC_INIT,
                                     "cubec_tuner_create", "desc"));
    cubec_tuner_desc whole = CUBEC_TUNER_DESC_INIT;
    api_struct_read(user, &whole, sizeof whole);
    const cubec_tuner_desc *desc = &whole;
    if (!desc->name || !desc->name[0])
        return INVALID_ARG("cubec_tuner_create: desc->name is %s (a tuner needs a name)",
                           desc->name ? "empty" : "NULL");
    size_t name_len = strlen(desc->name);
    if (name_len > CUBEC_TUNE_MAX_NAME_BYTES)
        return INVALID_ARG("cubec_tuner_create: desc->name is %zu bytes, more than the %u allowed",
                           name_len, CUBEC_TUNE_MAX_NAME_BYTES);
    if (desc->samples > CUBEC_TUNE_MAX_SAMPLES)
        return INVALID_ARG("cubec_tuner_create: desc->samples is %" PRIu32 ", more than the %u "
                           "allowed",
                           desc->samples, CUBEC_TUNE_MAX_SAMPLES);
    if (desc->warmup > MAX_WARMUP)
        return INVALID_ARG("cubec_tuner_create: desc->warmup is %" PRIu32 ", more than the %u "
                           "allowed",
                           desc->warmup, MAX_WARMUP);
    RETURN_IF_ERROR(api_lock(device, "cubec_tuner_create"));
    const gpu_cache_identity *id = &device->gpu->cache_id;
    char uuid[33];
    for (size_t i = 0; i < 16; i++)
        snprintf(uuid + 2 * i, 3, "%02x", id->uuid[i]);
    char device_name[256];
    snprintf(device_name, sizeof device_name, "%s", device->info.name);
    char cache_dir[448];
    snprintf(cache_dir, sizeof cache_dir, "%s", device->config.cache_dir);
    uint64_t cache_max = (uint64_t)device->config.cache_max_bytes;
    pthread_mutex_unlock(&device->lock);

    cubec_tuner *t = calloc(1, sizeof *t);
    if (!t) return status_make(CUBEC_OUT_OF_MEMORY, "cubec_tuner_create: host out of memory");
    t->device = device;
    memcpy(t->name, desc->name, name_len + 1);
    t->warmup = desc->warmup ? desc->warmup : DEFAULT_WARMUP;
    t->samples = desc->samples ? desc->samples : DEFAULT_SAMPLES;
    t->memory_only = desc->memory_only != 0;
    /* The spec's namespace, autotune/<version>/<device>/<tuner>: the device is its driver's
     * pipeline cache identity and its name (the null backend has no identity). */
    snprintf(t->namespace_, sizeof t->namespace_,
             "autotune/%s/%08" PRIx32 "-%08" PRIx32 "-%08" PRIx32 "-%s-%s/%s",
             kernel_disk_version(), id->vendor_id, id->device_id, id->driver_version, uuid,
             device_name, t->name);
    memcpy(t->cache_dir, cache_dir, sizeof cache_dir);
    t->cache_max_bytes = cache_max;
    pthread_mutex_init(&t->lock, NULL);
    *out_tuner = t;
    return NULL;
}

cubec_status cubec_tuner_destroy(cubec_tuner *tuner)
{
    if (!tuner) return NULL;
    /* A candidate that destroyed its tuner would free it under the cubec_tune_choose that runs
     * the candidate; another thread's call would free it under that call. */
    if (measuring_here(tuner))
        return INVALID_ARG("cubec_tuner_destroy: a candidate of tuner '%s' destroyed that tuner "
                           "while it measured; the tuner is kept",
                           tuner->name);
    uint32_t users = atomic_load(&tuner->users);
    if (users)
        return INVALID_ARG("cubec_tuner_destroy: tuner '%s' is in use by %" PRIu32 " call(s) of "
                           "cubec_tune_choose or cubec_tune_outcome_get on other threads; the "
                           "tuner is kept",
                           tuner->name, users);
    for (uint32_t i = 0; i < tuner->choice_count; i++) {
        free(tuner->choices[i].key);
        free(tuner->choices[i].name);
    }
    free(tuner->choices);
    free(tuner->outcomes);
    disk_cache_close(tuner->disk);
    pthread_mutex_destroy(&tuner->lock);
    free(tuner);
    return NULL;
}

/* ---- the request ------------------------------------------------------------------------- */

static cubec_status check_request(const cubec_tune_request *r)
{
    const char *fn = "cubec_tune_choose";
    if (!r->key) return INVALID_ARG("%s: request->key is NULL", fn);
    if (!r->key[0]) return INVALID_ARG("%s: request->key is empty", fn);
    size_t key_len = strlen(r->key);
    if (key_len > CUBEC_TUNE_MAX_KEY_BYTES)
        return INVALID_ARG("%s: request->key is %zu bytes, more than the %u allowed", fn, key_len,
                           CUBEC_TUNE_MAX_KEY_BYTES);
    if (r->candidate_count == 0)
        return INVALID_ARG("%s: request->candidate_count is 0 (key '%s')", fn, r->key);
    if (r->candidate_count > CUBEC_TUNE_MAX_CANDIDATES)
        return INVALID_ARG("%s: request->candidate_count is %" PRIu32 ", more than the %u allowed",
                           fn, r->candidate_count, CUBEC_TUNE_MAX_CANDIDATES);
    if (!r->candidates)
        return INVALID_ARG("%s: request->candidates is NULL with candidate_count %" PRIu32, fn,
                           r->candidate_count);
    for (uint32_t i = 0; i < r->candidate_count; i++) {
        const cubec_tune_candidate *c = &r->candidates[i];
        if (!c->name || !c->name[0])
            return INVALID_ARG("%s: request->candidates[%" PRIu32 "].name is %s", fn, i,
                               c->name ? "empty" : "NULL");
        if (strlen(c->name) > CUBEC_TUNE_MAX_NAME_BYTES)
            return INVALID_ARG("%s: request->candidates[%" PRIu32 "].name is %zu bytes, more "
                               "than the %u allowed",
                               fn, i, strlen(c->name), CUBEC_TUNE_MAX_NAME_BYTES);
        if (!c->run)
            return INVALID_ARG("%s: request->candidates[%" PRIu32 "].run ('%s') is NULL", fn, i,
                               c->name);
        /* The name identifies the stored winner: two of one name could not be told apart. */
        for (uint32_t j = 0; j < i; j++)
            if (!strcmp(r->candidates[j].name, c->name))
                return INVALID_ARG("%s: request->candidates[%" PRIu32 "] and [%" PRIu32
                                   "] are both named '%s'",
                                   fn, j, i, c->name);
    }
    return NULL;
}

static cubec_status check_stream(cubec_device *d, cubec_stream stream)
{
    RETURN_IF_ERROR(api_lock(d, "cubec_tune_choose"));
    stream_ref s;
    return api_unlock(d, api_slot(d, stream, "cubec_tune_choose", &s));
}

/* The stored choice is for this request: same candidates (count and the winner's name) and the
 * same checksum. Otherwise *why says what differs. */
static int choice_fits(const cubec_tune_request *r, uint32_t count, uint32_t index,
                       const char *name, uint64_t checksum, char *why, size_t cap)
{
    if (checksum != r->checksum)
        snprintf(why, cap, "it was made with checksum %" PRIu64 ", the request has %" PRIu64,
                 checksum, r->checksum);
    else if (count != r->candidate_count)
        snprintf(why, cap, "it was made among %" PRIu32 " candidates, the request has %" PRIu32,
                 count, r->candidate_count);
    else if (index >= count || strcmp(r->candidates[index].name, name) != 0)
        snprintf(why, cap, "its winner, candidate %" PRIu32 " '%s', is not the request's", index,
                 name);
    else
        return 1;
    return 0;
}

/* ---- memory ------------------------------------------------------------------------------ */

static choice *find_choice(cubec_tuner *t, const char *key)
{
    uint64_t h = hash_str(HASH_SEED, key);
    for (uint32_t i = 0; i < t->choice_count; i++)
        if (t->choices[i].key_hash == h && !strcmp(t->choices[i].key, key)) return &t->choices[i];
    return NULL;
}

/* Remembers (or replaces) the choice for r->key; a host out of memory only forgets it. */
static void remember(cubec_tuner *t, const cubec_tune_request *r, uint32_t index,
                     uint64_t median_ns)
{
    char *name = strfmt("%s", r->candidates[index].name);
    if (!name) return;
    choice *c = find_choice(t, r->key);
    if (!c) {
        char *key = strfmt("%s", r->key);
        if (key && t->choice_count == t->choice_cap) {
            uint32_t cap = t->choice_cap ? 2 * t->choice_cap : 8;
            choice *grown = realloc(t->choices, cap * sizeof *grown);
            if (grown) {
                t->choices = grown;
                t->choice_cap = cap;
            }
        }
        if (!key || t->choice_count == t->choice_cap) {
            free(key);
            free(name);
            return;
        }
        c = &t->choices[t->choice_count++];
        *c = (choice){.key = key, .key_hash = hash_str(HASH_SEED, key)};
    }
    free(c->name);
    c->name = name;
    c->checksum = r->checksum;
    c->count = r->candidate_count;
    c->index = index;
    c->median_ns = median_ns;
}

/* ---- disk -------------------------------------------------------------------------------- */

/* The payload of a stored choice, in the host's byte order (the disk cache's entries are). */
typedef struct entry_head {
    char magic[8]; /* "CUBECTUN" */
    uint32_t format;
    uint32_t count, index, name_len;
    uint64_t checksum, median_ns;
} entry_head;

static void open_disk(cubec_tuner *t)
{
    if (t->disk_checked || t->memory_only) return;
    t->disk_checked = 1;
    char dir[512];
    disk_cache_resolve_dir(t->cache_dir, dir, sizeof dir);
    if (!dir[0]) {
        if (strcmp(t->cache_dir, "none") != 0)
            LOG(LOG_WARN, LOG_SYS_PROFILING,
                "autotune: tuner '%s' remembers its choices in memory only: neither "
                "XDG_CACHE_HOME nor HOME names a directory (set [compile] cache_dir or "
                "CUBEC_CACHE_DIR, or `none`)",
                t->name);
        return;
    }
    cubec_status err = disk_cache_open(dir, t->cache_max_bytes, kernel_disk_version(), &t->disk);
    if (err) {
        LOG(LOG_WARN, LOG_SYS_PROFILING,
            "autotune: tuner '%s' remembers its choices in memory only: %s", t->name,
            cubec_status_message(err));
        cubec_status_free(err);
    }
}

/* The entry's key: the namespace and the request's key, each with its terminating NUL (neither
 * can hold one, so no two pairs make one key). */
static unsigned char *entry_key(const cubec_tuner *t, const char *key, size_t *out_size)
{
    size_t ns_size = strlen(t->namespace_) + 1, key_size = strlen(key) + 1;
    unsigned char *k = malloc(ns_size + key_size);
    if (!k) return NULL;
    memcpy(k, t->namespace_, ns_size);
    memcpy(k + ns_size, key, key_size);
    *out_size = ns_size + key_size;
    return k;
}

const char *tune_entry_path(cubec_tuner *t, const char *key, char *buf, size_t cap)
{
    buf[0] = 0;
    pthread_mutex_lock(&t->lock);
    open_disk(t);
    size_t key_size = 0;
    unsigned char *k = t->disk ? entry_key(t, key, &key_size) : NULL;
    if (k) disk_cache_path(t->disk, "tune", k, key_size, buf, cap);
    free(k);
    pthread_mutex_unlock(&t->lock);
    return buf;
}

void tune_disk_stats(cubec_tuner *t, disk_cache_stats *out)
{
    *out = (disk_cache_stats){0};
    pthread_mutex_lock(&t->lock);
    if (t->disk) disk_cache_get_stats(t->disk, out);
    pthread_mutex_unlock(&t->lock);
}

/* The stored choice for the request, if there is one that fits: 1 with *out_index and
 * *out_median. */
static int load_choice(cubec_tuner *t, const cubec_tune_request *r, uint32_t *out_index,
                       uint64_t *out_median)
{
    open_disk(t);
    size_t key_size = 0;
    unsigned char *k = t->disk ? entry_key(t, r->key, &key_size) : NULL;
    if (!k) return 0;
    disk_cache_stats before;
    disk_cache_get_stats(t->disk, &before);
    void *data = NULL;
    size_t size = 0;
    int hit = disk_cache_get(t->disk, "tune", k, key_size, &data, &size);
    char path[1024];
    disk_cache_path(t->disk, "tune", k, key_size, path, sizeof path);
    free(k);
    if (!hit) {
        disk_cache_stats after;
        disk_cache_get_stats(t->disk, &after);
        if (after.rejected > before.rejected)
            LOG(LOG_WARN, LOG_SYS_PROFILING,
                "autotune: tuner '%s', key '%s': the stored choice %s could not be read; "
                "measuring again",
                t->name, r->key, path);
        return 0;
    }
    entry_head h;
    int fits = 0;
    char why[512] = "";
    if (size < sizeof h) {
        snprintf(why, sizeof why, "%zu bytes, fewer than a choice's %zu", size, sizeof h);
    } else {
        memcpy(&h, data, sizeof h);
        if (memcmp(h.magic, "CUBECTUN", 8) != 0)
            snprintf(why, sizeof why, "not a stored choice (its magic is wrong)");
        else if (h.format != TUNE_ENTRY_FORMAT)
            snprintf(why, sizeof why, "format %" PRIu32 ", not %u", h.format, TUNE_ENTRY_FORMAT);
        else if (h.name_len == 0 || h.name_len > CUBEC_TUNE_MAX_NAME_BYTES ||
                 size != sizeof h + h.name_len)
            snprintf(why, sizeof why,
                     "%zu bytes, which a %" PRIu32 "-byte winner's name does not "
                     "explain",
                     size, h.name_len);
        else
            fits = 1;
    }
    if (!fits) {
        LOG(LOG_WARN, LOG_SYS_PROFILING, "autotune: ignoring %s: %s; measuring again", path, why);
        free(data);
        return 0;
    }
    char name[CUBEC_TUNE_MAX_NAME_BYTES + 1];
    memcpy(name, (const char *)data + sizeof h, h.name_len);
    name[h.name_len] = 0;
    free(data);
    if (!choice_fits(r, h.count, h.index, name, h.checksum, why, sizeof why)) {
        LOG(LOG_INFO, LOG_SYS_PROFILING,
            "autotune: tuner '%s', key '%s': the stored choice does not fit: %s; measuring again",
            t->name, r->key, why);
        return 0;
    }
    *out_index = h.index;
    *out_median = h.median_ns;
    return 1;
}

static void store_choice(cubec_tuner *t, const cubec_tune_request *r, uint32_t index,
                         uint64_t median_ns)
{
    size_t key_size = 0;
    unsigned char *k = t->disk ? entry_key(t, r->key, &key_size) : NULL;
    if (!k) return;
    const char *name = r->candidates[index].name;
    entry_head h = {.format = TUNE_ENTRY_FORMAT,
                    .count = r->candidate_count,
                    .index = index,
                    .name_len = (uint32_t)strlen(name),
                    .checksum = r->checksum,
                    .median_ns = median_ns};
    memcpy(h.magic, "CUBECTUN", 8);
    unsigned char payload[sizeof h + CUBEC_TUNE_MAX_NAME_BYTES];
    memcpy(payload, &h, sizeof h);
    memcpy(payload + sizeof h, name, h.name_len);
    /* A failed write is logged by the cache; the choice is still remembered in memory. */
    (void)disk_cache_put(t->disk, "tune", k, key_size, payload, sizeof h + h.name_len);
    free(k);
}

/* ---- measuring --------------------------------------------------------------------------- */

/* Errors that end the tuning rather than one candidate: the device is gone for all of them. */
static int fatal(cubec_status st)
{
    cubec_code c = cubec_status_code(st);
    return c == CUBEC_DEVICE_LOST || c == CUBEC_TIMEOUT;
}

static void reject(cubec_tune_outcome *o, cubec_status why)
{
    o->state = CUBEC_TUNE_REJECTED;
    o->code = cubec_status_code(why);
    snprintf(o->reason, sizeof o->reason, "%s", cubec_status_message(why));
    cubec_status_free(why);
}

/* After a rejected run: waits for what it queued, so that the next profile begins on an idle
 * GPU. What that work did wrong is the candidate's, already recorded. */
static cubec_status settle(cubec_device *d, cubec_stream s)
{
    cubec_status st = cubec_sync(d, s);
    if (st && !fatal(st)) {
        cubec_status_free(st);
        st = NULL;
    }
    return st;
}

/* One profiled run of candidate `c`: its time in *out_ns, or the candidate rejected in *o.
 * Returns only what ends the tuning. */
static cubec_status run_once(cubec_device *d, cubec_stream s, const cubec_tune_candidate *c,
                             cubec_tune_outcome *o, uint64_t *out_ns)
{
    cubec_profile p;
    RETURN_IF_ERROR(cubec_profile_begin(d, s, &p));
    cubec_status st = c->run(d, s, c->user);
    if (st) {
        cubec_status_free(cubec_profile_abandon(d, s, p));
        if (fatal(st)) return st;
        reject(o, status_annotate(st, "its run returned an error"));
        return settle(d, s);
    }
    cubec_profile_result r = CUBEC_PROFILE_RESULT_INIT;
    st = cubec_profile_end(d, s, p, &r);
    if (st) {
        if (cubec_status_code(st) != CUBEC_PROFILE_INVALID) return st;
        reject(o, st);
        return settle(d, s);
    }
    *out_ns = r.duration_ns;
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Every candidate rejected: one error naming the tuner, the key and each reason. Its code is the
 * rejections' when they share one, else CUBEC_PROFILE_INVALID. */
static cubec_status all_rejected(const cubec_tuner *t, const cubec_tune_request *r)
{
    cubec_code code = t->outcomes[0].code;
    size_t cap = 256;
    for (uint32_t i = 0; i < r->candidate_count; i++) {
        if (t->outcomes[i].code != code) code = CUBEC_PROFILE_INVALID;
        cap += strlen(r->candidates[i].name) + strlen(t->outcomes[i].reason) + 32;
    }
    char *list = malloc(cap);
    if (!list)
        return status_make(code,
                           "cubec_tune_choose: tuner '%s', key '%s': every candidate "
                           "was rejected",
                           t->name, r->key);
    size_t at = 0;
    for (uint32_t i = 0; i < r->candidate_count && at < cap; i++)
        at += (size_t)snprintf(list + at, cap - at, "%s[%" PRIu32 "] %s: %s", i ? "; " : "", i,
                               r->candidates[i].name, t->outcomes[i].reason);
    cubec_status err = status_make(code,
                                   "cubec_tune_choose: tuner '%s', key '%s': every candidate was "
                                   "rejected: %s",
                                   t->name, r->key, list);
    free(list);
    return err;
}

/* Measures every candidate (warm-up runs, then `samples` profiled runs each, round-robin so that
 * a slow spell of the machine weighs on all) and picks the lowest median. */
static cubec_status measure(cubec_tuner *t, cubec_stream s, const cubec_tune_request *r,
                            uint32_t *out_index, uint64_t *out_median)
{
    cubec_device *d = t->device;
    const uint32_t n = r->candidate_count, samples = t->samples;
    cubec_status err = cubec_sync(d, s);
    if (err)
        return status_annotate(err,
                               "cubec_tune_choose: tuner '%s', key '%s': the stream's "
                               "earlier work",
                               t->name, r->key);
    uint64_t *times = calloc((size_t)n * samples, sizeof *times);
    if (!times) return status_make(CUBEC_OUT_OF_MEMORY, "cubec_tune_choose: host out of memory");
    /* Candidates run for real even inside a dry run of the program (spec 9's RealRun guard):
     * dropped launches would all measure nothing. */
    err = cubec_run_window_begin(d, s, CUBEC_RUN_REAL);
    if (err) {
        free(times);
        return status_annotate(err, "cubec_tune_choose: tuner '%s', key '%s'", t->name, r->key);
    }
    tuning_frame frame = {t, tuning_now};
    tuning_now = &frame;
    for (uint32_t round = 0; round < t->warmup + samples && !err; round++) {
        for (uint32_t i = 0; i < n && !err; i++) {
            if (t->outcomes[i].state == CUBEC_TUNE_REJECTED) continue;
            uint64_t ns = 0;
            err = run_once(d, s, &r->candidates[i], &t->outcomes[i], &ns);
            if (!err && round >= t->warmup && t->outcomes[i].state != CUBEC_TUNE_REJECTED)
                times[(size_t)i * samples + (round - t->warmup)] = ns;
        }
    }
    tuning_now = frame.outer;
    cubec_status closed = cubec_run_window_end(d, s);
    if (!err)
        err = closed;
    else
        cubec_status_free(closed);
    if (err) {
        free(times);
        return status_annotate(err, "cubec_tune_choose: tuner '%s', key '%s'", t->name, r->key);
    }
    uint32_t best = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) {
        cubec_tune_outcome *o = &t->outcomes[i];
        if (o->state == CUBEC_TUNE_REJECTED) {
            LOG(LOG_INFO, LOG_SYS_PROFILING, "autotune: tuner '%s', key '%s': %s rejected: %s",
                t->name, r->key, r->candidates[i].name, o->reason);
            continue;
        }
        uint64_t *v = times + (size_t)i * samples;
        qsort(v, samples, sizeof *v, cmp_u64);
        o->state = CUBEC_TUNE_TIMED;
        o->samples = samples;
        o->min_ns = v[0];
        o->median_ns = (v[(samples - 1) / 2] + v[samples / 2]) / 2;
        LOG(LOG_DEBUG, LOG_SYS_PROFILING,
            "autotune: tuner '%s', key '%s': %s: median %.3f us, min %.3f us", t->name, r->key,
            r->candidates[i].name, (double)o->median_ns / 1e3, (double)o->min_ns / 1e3);
        if (best == UINT32_MAX || o->median_ns < t->outcomes[best].median_ns) best = i;
    }
    free(times);
    if (best == UINT32_MAX) return all_rejected(t, r);
    *out_index = best;
    *out_median = t->outcomes[best].median_ns;
    return NULL;
}

/* ---- the entry points -------------------------------------------------------------------- */

static cubec_status choose(cubec_tuner *t, cubec_stream stream, const cubec_tune_request *r,
                           cubec_tune_result *out)
{
    RETURN_IF_ERROR(check_request(r));
    RETURN_IF_ERROR(check_stream(t->device, stream));
    cubec_tune_outcome *outcomes = calloc(r->candidate_count, sizeof *outcomes);
    if (!outcomes) return status_make(CUBEC_OUT_OF_MEMORY, "cubec_tune_choose: host out of memory");
    free(t->outcomes);
    t->outcomes = outcomes;
    t->outcome_count = r->candidate_count;
    if (r->candidate_count == 1) {
        *out = (cubec_tune_result){
            .struct_size = sizeof(cubec_tune_result), .index = 0, .source = CUBEC_TUNE_SINGLE};
        return NULL;
    }
    const choice *c = find_choice(t, r->key);
    char why[512];
    if (c && choice_fits(r, c->count, c->index, c->name, c->checksum, why, sizeof why)) {
        *out = (cubec_tune_result){.struct_size = sizeof(cubec_tune_result),
                                   .index = c->index,
                                   .source = CUBEC_TUNE_MEMORY,
                                   .median_ns = c->median_ns};
        return NULL;
    }
    uint32_t index = 0;
    uint64_t median = 0;
    if (load_choice(t, r, &index, &median)) {
        remember(t, r, index, median);
        LOG(LOG_DEBUG, LOG_SYS_PROFILING, "autotune: tuner '%s', key '%s': %s, stored", t->name,
            r->key, r->candidates[index].name);
        *out = (cubec_tune_result){.struct_size = sizeof(cubec_tune_result),
                                   .index = index,
                                   .source = CUBEC_TUNE_DISK,
                                   .median_ns = median};
        return NULL;
    }
    RETURN_IF_ERROR(measure(t, stream, r, &index, &median));
    remember(t, r, index, median);
    store_choice(t, r, index, median);
    LOG(LOG_INFO, LOG_SYS_PROFILING,
        "autotune: tuner '%s', key '%s': chose %s (median %.3f us) of %" PRIu32 " candidates",
        t->name, r->key, r->candidates[index].name, (double)median / 1e3, r->candidate_count);
    *out = (cubec_tune_result){.struct_size = sizeof(cubec_tune_result),
                               .index = index,
                               .source = CUBEC_TUNE_MEASURED,
                               .median_ns = median};
    return NULL;
}

cubec_status cubec_tune_choose(cubec_tuner *tuner, cubec_stream stream,
                               const cubec_tune_request *user, cubec_tune_result *out_result)
{
    if (!out_result) return INVALID_ARG("cubec_tune_choose: out_result is NULL");
    RETURN_IF_ERROR(API_STRUCT_CHECK(out_result, cubec_tune_result, CUBEC_TUNE_RESULT_INIT,
                                     "cubec_tune_choose", "out_result"));
    if (user)
        RETURN_IF_ERROR(API_STRUCT_CHECK(user, cubec_tune_request, CUBEC_TUNE_REQUEST_INIT,
                                         "cubec_tune_choose", "request"));
    api_struct_clear(out_result);
    if (!tuner) return INVALID_ARG("cubec_tune_choose: tuner is NULL");
    if (!user) return INVALID_ARG("cubec_tune_choose: request is NULL");
    cubec_tune_request whole = CUBEC_TUNE_REQUEST_INIT;
    api_struct_read(user, &whole, sizeof whole);
    const cubec_tune_request *request = &whole;
    if (measuring_here(tuner)) return reentered(tuner, "cubec_tune_choose");
    atomic_fetch_add(&tuner->users, 1);
    pthread_mutex_lock(&tuner->lock);
    cubec_tune_result r = CUBEC_TUNE_RESULT_INIT;
    cubec_status err = choose(tuner, stream, request, &r);
    pthread_mutex_unlock(&tuner->lock);
    atomic_fetch_sub(&tuner->users, 1);
    if (!err) api_struct_write(out_result, &r);
    return err;
}

cubec_status cubec_tune_outcome_get(cubec_tuner *tuner, uint32_t index,
                                    cubec_tune_outcome *out_outcome)
{
    if (!out_outcome) return INVALID_ARG("cubec_tune_outcome_get: out_outcome is NULL");
    RETURN_IF_ERROR(API_STRUCT_CHECK(out_outcome, cubec_tune_outcome, CUBEC_TUNE_OUTCOME_INIT,
                                     "cubec_tune_outcome_get", "out_outcome"));
    api_struct_clear(out_outcome);
    if (!tuner) return INVALID_ARG("cubec_tune_outcome_get: tuner is NULL");
    if (measuring_here(tuner)) return reentered(tuner, "cubec_tune_outcome_get");
    atomic_fetch_add(&tuner->users, 1);
    pthread_mutex_lock(&tuner->lock);
    cubec_status err = NULL;
    if (index >= tuner->outcome_count)
        err = INVALID_ARG("cubec_tune_outcome_get: index %" PRIu32 " is out of range: tuner '%s' "
                          "last chose among %" PRIu32 " candidates",
                          index, tuner->name, tuner->outcome_count);
    else
        api_struct_write(out_outcome, &tuner->outcomes[index]);
    pthread_mutex_unlock(&tuner->lock);
    atomic_fetch_sub(&tuner->users, 1);
    return err;
}
