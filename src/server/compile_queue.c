/* The compile queue. A queued kernel gets its handle at once; worker threads take the jobs in the
 * order they were queued and build each with server_kernel_create, which holds the device lock
 * only to look the identity up and to publish, so builds of distinct kernels run in parallel
 * (shaderc on one compiler object, the SPIR-V validator and reflection keep no shared state, and
 * the device's VkPipelineCache is created without the externally-synchronized flag, so the driver
 * synchronizes it). Workers start one at a time as jobs wait, up to [compile] parallelism; a
 * thread that needs a kernel no worker has taken compiles it itself, so a launch never waits for
 * another kernel's build. */
#include "server/compile_queue.h"

#include "base/log.h"
#include "server/buffers.h"
#include "server/device.h"
#include "server/failures.h"
#include "server/graph.h"
#include "server/health.h"
#include "server/kernels.h"
#include "server/profile.h"
#include "server/streams.h"
#include "server/task.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- Jobs ------------------------------------------------------------------------------ */

/* Room for `n` bytes at *at in the copy (8-byte aligned); NULL while only measuring. */
static void *carve(char *base, size_t *at, size_t n)
{
    size_t start = (*at + 7u) & ~(size_t)7u;
    *at = start + n;
    return base ? base + start : NULL;
}

static const char *copy_str(char *base, size_t *at, const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *p = carve(base, at, n);
    if (p) memcpy(p, s, n);
    return p;
}

/* Copies what `src` points to into `base` (NULL: only measures); returns the bytes used. */
static size_t copy_desc(const cubec_kernel_desc *src, cubec_kernel_desc *dst, char *base)
{
    size_t at = 0;
    *dst = *src;
    dst->name = copy_str(base, &at, src->name);
    dst->glsl = copy_str(base, &at, src->glsl);
    dst->wgsl = copy_str(base, &at, src->wgsl);
    dst->entry_point = copy_str(base, &at, src->entry_point);
    dst->glsl_path = copy_str(base, &at, src->glsl_path);
    dst->preamble = copy_str(base, &at, src->preamble);
    if (src->include_dir_count) {
        const char **dirs = carve(base, &at, src->include_dir_count * sizeof *dirs);
        for (uint32_t i = 0; i < src->include_dir_count; i++) {
            const char *dir = copy_str(base, &at, src->include_dirs[i]);
            if (dirs) dirs[i] = dir;
        }
        dst->include_dirs = dirs;
    }
    if (src->spirv) {
        uint32_t *w = carve(base, &at, src->spirv_words * sizeof *w);
        if (w) memcpy(w, src->spirv, src->spirv_words * sizeof *w);
        dst->spirv = w;
    }
    if (src->define_count) {
        cubec_define *defs = carve(base, &at, src->define_count * sizeof *defs);
        for (uint32_t i = 0; i < src->define_count; i++) {
            const char *name = copy_str(base, &at, src->defines[i].name);
            const char *value = copy_str(base, &at, src->defines[i].value);
            if (defs) defs[i] = (cubec_define){name, value};
        }
        dst->defines = defs;
    }
    if (src->spec_constant_count) {
        size_t bytes = src->spec_constant_count * sizeof *src->spec_constants;
        cubec_spec_constant *sc = carve(base, &at, bytes);
        if (sc) memcpy(sc, src->spec_constants, bytes);
        dst->spec_constants = sc;
    }
    return at;
}

static compile_job *job_new(const cubec_kernel_desc *desc, uint64_t key)
{
    compile_job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    cubec_kernel_desc measured = CUBEC_KERNEL_DESC_INIT;
    size_t bytes = copy_desc(desc, &measured, NULL);
    j->copy = malloc(bytes ? bytes : 1);
    if (!j->copy) {
        free(j);
        return NULL;
    }
    copy_desc(desc, &j->desc, j->copy);
    j->key = key;
    j->refs = 1; /* the queue's, until it is done */
    return j;
}

static void job_release(compile_job *j)
{
    if (!j || --j->refs) return;
    cubec_status_free(j->err);
    free(j->copy);
    glsl_sources_free(j->includes);
    free(j);
}

/* ---- The queue ------------------------------------------------------------------------- */

static uint32_t parallelism_of(const cubec_config *c)
{
    if (c->compile_parallelism > 0) return (uint32_t)c->compile_parallelism;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 1 ? (uint32_t)cores : 1u;
}

/* The device's queue, made on first use; NULL when the host is out of memory. */
static compile_queue *queue_of(cubec_device *d)
{
    compile_queue *q = d->kernels->queue;
    if (q) return q;
    q = calloc(1, sizeof *q);
    if (!q) return NULL;
    q->stats.parallelism = parallelism_of(&d->config);
    q->threads = calloc(q->stats.parallelism, sizeof *q->threads);
    if (!q->threads) {
        free(q);
        return NULL;
    }
    pthread_cond_init(&q->work, NULL);
    pthread_cond_init(&q->done, NULL);
    d->kernels->queue = q;
    return q;
}

static compile_job *find_job(const compile_queue *q, uint64_t key)
{
    for (compile_job *j = q->head; j; j = j->next)
        if (j->key == key) return j;
    return NULL;
}

static compile_job *first_waiting(const compile_queue *q)
{
    for (compile_job *j = q->head; j; j = j->next)
        if (!j->taken) return j;
    return NULL;
}

/* The job ends: its result is kept, it leaves the list, and the queue's share goes. */
static void finish(compile_queue *q, compile_job *j, pipeline_entry *e, cubec_status err)
{
    j->done = 1;
    j->entry = err ? NULL : e;
    j->err = err;
    if (err) q->stats.failed++;
    compile_job **p = &q->head, *prev = NULL;
    while (*p && *p != j) {
        prev = *p;
        p = &(*p)->next;
    }
    if (*p) {
        *p = j->next;
        if (q->tail == j) q->tail = prev;
    }
    free(j->copy); /* nothing reads the description any more */
    j->copy = NULL;
    glsl_sources_free(j->includes);
    j->includes = NULL;
    memset(&j->desc, 0, sizeof j->desc);
    pthread_cond_broadcast(&q->done);
    job_release(j);
}

/* Builds a job on this thread (device lock held; server_kernel_create releases it while it
 * builds). */
static void run_job(cubec_device *d, compile_queue *q, compile_job *j)
{
    j->taken = 1;
    q->waiting--;
    pipeline_entry *e = NULL;
    cubec_status err = server_check_alive(d);
    if (!err) err = server_kernel_create(d, &j->desc, j->includes, j->key, &e);
    finish(q, j, e, err);
}

static void *worker_main(void *arg)
{
    cubec_device *d = arg;
    pthread_mutex_lock(&d->lock);
    compile_queue *q = d->kernels->queue;
    while (!q->stop) {
        compile_job *j = first_waiting(q);
        if (!j) {
            q->idle++;
            pthread_cond_wait(&q->work, &d->lock);
            q->idle--;
            continue;
        }
        q->stats.by_workers++;
        run_job(d, q, j);
    }
    pthread_mutex_unlock(&d->lock);
    return NULL;
}

/* Wakes a sleeping worker for a new job, or starts one when none sleeps and the pool has room. A
 * worker that cannot start is logged: waiting threads then compile their kernels themselves. */
static void wake_worker(cubec_device *d, compile_queue *q)
{
    if (q->idle >= q->waiting || q->stats.threads >= q->stats.parallelism) {
        pthread_cond_signal(&q->work);
        return;
    }
    int rc = pthread_create(&q->threads[q->stats.threads], NULL, worker_main, d);
    if (rc) {
        LOG(LOG_WARN, LOG_SYS_COMPILE,
            "compile queue: starting worker thread %u failed (%s); threads waiting for kernels "
            "compile them",
            q->stats.threads + 1, strerror(rc));
        return;
    }
    q->stats.threads++;
}

cubec_status compile_queue_add(cubec_device *d, const cubec_kernel_desc *desc,
                               glsl_sources **includes, uint64_t key, kernel_obj *k)
{
    compile_queue *q = queue_of(d);
    if (!q) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (compile queue)");
    memset(k, 0, sizeof *k);
    pipeline_entry *e = server_kernel_find(d, key);
    if (e) {
        q->stats.queued++;
        q->stats.ready++;
        k->entry = e;
        return server_kernel_name(e, desc->name, &k->name);
    }
    compile_job *j = find_job(q, key);
    if (j) {
        q->stats.deduped++;
    } else {
        j = job_new(desc, key);
        if (!j) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (queued kernel)");
        j->includes = *includes;
        *includes = NULL;
        if (q->tail)
            q->tail->next = j;
        else
            q->head = j;
        q->tail = j;
        q->waiting++;
        q->stats.jobs++;
        wake_worker(d, q);
    }
    q->stats.queued++;
    j->refs++;
    k->job = j;
    snprintf(k->queued_name, sizeof k->queued_name, "%.31s", desc->name ? desc->name : "kernel");
    return NULL;
}

/* Until `j` is done: compiles it here when no thread has taken it, else waits for it. */
static void await(cubec_device *d, compile_queue *q, compile_job *j)
{
    j->refs++;
    while (!j->done) {
        if (!j->taken) {
            q->stats.by_waiters++;
            run_job(d, q, j);
        } else {
            q->stats.waits++;
            pthread_cond_wait(&q->done, &d->lock);
        }
    }
    job_release(j);
}

cubec_status compile_queue_resolve(cubec_device *d, uint64_t id, const char *arg, kernel_obj **out)
{
    for (;;) {
        void *o;
        RETURN_IF_ERROR(handle_table_lookup(&d->kernels->handles, id, arg, &o));
        kernel_obj *k = o;
        compile_job *j = k->job;
        if (!j || (j->done && j->err)) {
            *out = k;
            return NULL;
        }
        if (j->done) {
            /* The handle takes its entry; its job has nothing more to give it. */
            RETURN_IF_ERROR(server_kernel_name(j->entry, k->queued_name, &k->name));
            k->entry = j->entry;
            k->job = NULL;
            job_release(j);
            *out = k;
            return NULL;
        }
        /* The wait releases the device lock: the handle is looked up again after it (another
         * thread may have destroyed it), and the device may have been lost meanwhile. */
        await(d, d->kernels->queue, j);
        RETURN_IF_ERROR(server_check_alive(d));
    }
}

/* The failed job of the handle in `slot`: a job that finished left the queue's list, but its
 * kernel was queued and did not compile. */
static compile_job *failed_job_of(const handle_table *t, uint32_t slot)
{
    const kernel_obj *k = t->slots[slot].object;
    return k && k->job && k->job->done && k->job->err ? k->job : NULL;
}

cubec_status compile_queue_wait_all(cubec_device *d)
{
    compile_queue *q = d->kernels->queue;
    if (!q) return NULL;
    const handle_table *t = &d->kernels->handles;
    uint32_t most = 0; /* handles may share a failed job: counted once below */
    for (compile_job *j = q->head; j; j = j->next)
        most++;
    for (uint32_t i = 0; i < t->count; i++)
        most += failed_job_of(t, i) != NULL;
    if (!most) return NULL;
    compile_job **jobs = malloc(most * sizeof(compile_job *));
    if (!jobs) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (compile queue)");
    uint32_t n = 0;
    /* Those that failed already first: they were queued before the ones still in the list. */
    for (uint32_t i = 0; i < t->count; i++) {
        compile_job *j = failed_job_of(t, i);
        if (j && !j->listed) {
            j->listed = 1;
            jobs[n++] = j;
        }
    }
    for (compile_job *j = q->head; j; j = j->next)
        jobs[n++] = j;
    for (uint32_t i = 0; i < n; i++) {
        jobs[i]->listed = 0;
        jobs[i]->refs++;
    }
    /* This thread compiles what no worker has taken (in queue order) and only then sleeps:
     * waiting on the first job while later ones wait too would leave a core idle. */
    for (;;) {
        compile_job *next = NULL;
        int pending = 0;
        for (uint32_t i = 0; i < n && !next; i++) {
            pending |= !jobs[i]->done;
            if (!jobs[i]->taken) next = jobs[i];
        }
        if (next) {
            q->stats.by_waiters++;
            run_job(d, q, next);
        } else if (pending) {
            q->stats.waits++;
            pthread_cond_wait(&q->done, &d->lock);
        } else {
            break;
        }
    }
    uint32_t failed = 0;
    cubec_status first = NULL;
    for (uint32_t i = 0; i < n; i++) {
        if (jobs[i]->err && !failed++) first = status_clone(jobs[i]->err);
        job_release(jobs[i]);
    }
    free(jobs);
    if (!first) return NULL;
    return status_annotate(first, "%u of the %u kernels queued did not compile; the first", failed,
                           n);
}

cubec_status compile_queue_fail_launch(cubec_device *d, stream_ref s, const kernel_obj *k,
                                       buffer_obj *const *bufs, uint32_t n, uint32_t outputs)
{
    if (!outputs)
        return status_annotate(status_clone(k->job->err),
                               "cubec_launch: kernel '%s' did not compile in the compile queue, "
                               "and the launch "
                               "declares no outputs (desc->declared_outputs) to carry the error",
                               k->queued_name);
    /* Made before the drain below, which may release the device lock (and another thread
     * destroy the handle). */
    failure *f = failure_new(cubec_status_code(k->job->err),
                             "launch \"%s\" on stream %" PRIu64 " did not run: %s", k->queued_name,
                             s.number, cubec_status_message(k->job->err));
    char name[32];
    memcpy(name, k->queued_name, sizeof name);
    bound_range out[32];
    uint32_t count = 0;
    for (uint32_t i = 0; i < n; i++)
        if ((outputs >> i) & 1) {
            out[count] =
                (bound_range){bufs[i]->alloc, buffer_device_offset(bufs[i]), bufs[i]->size, 0};
            out[count++].alloc->refs++;
        }
    /* The error lands after the work queued earlier on those buffers: that work, recorded now,
     * clears older failures of the ranges it writes, and must not clear this one. */
    cubec_status err = NULL;
    for (uint32_t i = 0; i < count && !err; i++)
        err = server_drain_for_host(d, s.slot, out[i].alloc, 1);
    for (uint32_t i = 0; i < count; i++) {
        if (!err) server_taint(out[i].alloc, out[i].offset, out[i].size, f);
        server_alloc_release(d, out[i].alloc);
    }
    if (err) {
        failure_release(f);
        return err;
    }
    server_profiles_poison(d, s.slot, f);
    /* Inside a capture window the graph would miss the launch: the capture fails (spec 5.3). */
    if (server_graph_recording(d, s))
        server_graph_doom(d, s.slot, f->code, "launch \"%s\": its kernel did not compile", name);
    failure_release(f);
    return NULL;
}

void compile_queue_drop_handle(cubec_device *d, kernel_obj *k)
{
    (void)d;
    if (k && k->job) job_release(k->job);
    if (k) k->job = NULL;
}

void compile_queue_stop(cubec_device *d)
{
    compile_queue *q = d->kernels->queue;
    if (!q) return;
    pthread_mutex_lock(&d->lock);
    q->stop = 1;
    for (compile_job *j = first_waiting(q); j; j = first_waiting(q)) {
        j->taken = 1;
        q->waiting--;
        finish(q, j, NULL,
               status_make(CUBEC_INTERNAL, "kernel '%s': the device closed before it compiled",
                           j->desc.name ? j->desc.name : "kernel"));
    }
    pthread_cond_broadcast(&q->work);
    pthread_mutex_unlock(&d->lock);
    for (uint32_t i = 0; i < q->stats.threads; i++)
        pthread_join(q->threads[i], NULL);
    q->stats.threads = 0;
}

void compile_queue_destroy(cubec_device *d)
{
    compile_queue *q = d->kernels->queue;
    if (!q) return;
    pthread_cond_destroy(&q->work);
    pthread_cond_destroy(&q->done);
    free(q->threads);
    free(q);
    d->kernels->queue = NULL;
}

void compile_queue_get_stats(cubec_device *d, compile_queue_stats *out)
{
    pthread_mutex_lock(&d->lock);
    compile_queue *q = d->kernels->queue;
    if (q)
        *out = q->stats;
    else
        *out = (compile_queue_stats){.parallelism = parallelism_of(&d->config)};
    pthread_mutex_unlock(&d->lock);
}
