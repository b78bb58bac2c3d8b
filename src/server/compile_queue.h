/* The compile queue (server/compile_queue.c, docs/kernels.md "The compile queue"): kernels queued
 * by cubec_kernel_queue (or by cubec_kernel_create with [compile] async_create) are compiled by a
 * pool of worker threads, each build running without the device lock as every build does
 * (server_kernel_create). The queue's state is guarded by the device lock; its workers sleep on
 * the queue's condition variables with that lock. */
#ifndef CUBEC_SERVER_COMPILE_QUEUE_H
#define CUBEC_SERVER_COMPILE_QUEUE_H

#include "server/buffers.h"
#include "server/kernels.h"
#include "server/streams.h"

#include <pthread.h>

/* One queued compilation, shared by every handle queued with the same identity while it is
 * queued or compiling. */
typedef struct compile_job {
    uint64_t key;
    cubec_kernel_desc desc; /* a deep copy (in `copy`), freed once compiled */
    void *copy;
    glsl_sources *includes;   /* the files its GLSL includes, read when it was queued (owned) */
    int taken;                /* a thread compiles it */
    int done;                 /* compiled: `entry` or `err` is set */
    pipeline_entry *entry;    /* done without error: the published pipeline */
    cubec_status err;         /* done with an error: the compiler's diagnostic (owned) */
    uint32_t refs;            /* the queue until done, each handle, each waiting thread */
    int listed;               /* compile_queue_wait_all has it in its list already */
    struct compile_job *next; /* the queue's jobs not done, in the order they were queued */
} compile_job;

/* What a device's queue did, for tests and logs. */
typedef struct compile_queue_stats {
    uint64_t queued;      /* handles made by cubec_kernel_queue (and async creates) */
    uint64_t ready;       /* ... whose kernel was compiled already: ready at once, no job */
    uint64_t deduped;     /* ... that shared the job of a kernel queued or compiling */
    uint64_t jobs;        /* jobs made */
    uint64_t by_workers;  /* jobs compiled by a worker thread */
    uint64_t by_waiters;  /* jobs compiled by a thread that waited for one no worker had taken */
    uint64_t failed;      /* jobs that ended with an error */
    uint64_t waits;       /* waits for a job another thread was compiling */
    uint32_t threads;     /* workers started */
    uint32_t parallelism; /* the most workers ([compile] parallelism, or the online cores) */
} compile_queue_stats;

typedef struct compile_queue {
    compile_job *head, *tail; /* jobs not done, oldest first */
    uint32_t waiting;         /* jobs no thread has taken */
    uint32_t idle;            /* workers asleep on `work` */
    pthread_t *threads;       /* `stats.parallelism` slots, `stats.threads` started */
    pthread_cond_t work;      /* a job was queued, or the queue stops */
    pthread_cond_t done;      /* a job finished */
    int stop;                 /* the device closes: workers end */
    compile_queue_stats stats;
} compile_queue;

/* Fills a new handle `k` for `desc` (checked by api/, identity `key`, included files
 * *includes): its entry when the kernel is compiled already, else a job, queued unless one of that
 * identity is. A new job takes *includes (and sets it NULL): it compiles what was hashed. */
MUST_USE cubec_status compile_queue_add(cubec_device *d, const cubec_kernel_desc *desc,
                                        glsl_sources **includes, uint64_t key, kernel_obj *k);
/* The kernel handle `id` (refused as `arg` when it is not one), once it is no longer compiling:
 * the handle has its entry, or its job ended with an error (k->job->err). Waits only for that
 * kernel, releasing the device lock meanwhile; a job no thread has taken is compiled here. */
MUST_USE cubec_status compile_queue_resolve(cubec_device *d, uint64_t id, const char *arg,
                                            kernel_obj **out);
/* Waits for every job queued before the call (compiling those no thread has taken); the error of
 * the first that failed, with the count, or NULL. Jobs that failed before the call count too, for
 * as long as a handle holds them. */
MUST_USE cubec_status compile_queue_wait_all(cubec_device *d);
/* A launch of a kernel that did not compile (`k->job->err`): spec 5.4 rule 2, the buffers the
 * launch declares it writes (`outputs`, bit i for bufs[i]) carry the error, after the work queued
 * earlier on them, and nothing else is touched. With no output declared, the error is returned. */
MUST_USE cubec_status compile_queue_fail_launch(cubec_device *d, stream_ref s, const kernel_obj *k,
                                                buffer_obj *const *bufs, uint32_t n,
                                                uint32_t outputs);
/* A handle goes away (destroy, close): its share of its job. */
void compile_queue_drop_handle(cubec_device *d, kernel_obj *k);
/* At close, without the device lock: jobs no thread took end with an error, the workers finish
 * the jobs they hold and are joined. */
void compile_queue_stop(cubec_device *d);
/* After the handles are gone: frees the queue. */
void compile_queue_destroy(cubec_device *d);
/* Tests only: takes the device lock. */
void compile_queue_get_stats(cubec_device *d, compile_queue_stats *out);

#endif
