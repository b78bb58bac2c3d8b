/* Shared memcpys (see copy_pool.h). The caller publishes a job cut into parts; it and the helpers
 * take parts until none is left, and the caller waits until every part is done. Parts are whole
 * cache lines, so no two threads write one line. */
#include "base/copy_pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct copy_pool {
    pthread_mutex_t lock;
    pthread_cond_t work; /* a job was published, or stop */
    pthread_cond_t done; /* the last part of the job finished */
    pthread_t *threads;
    uint32_t helpers;
    int stop;
    /* The job (lock). */
    unsigned char *dst;
    const unsigned char *src;
    size_t n, part;
    uint32_t parts, next, finished;
};

/* Copies part i of the job. */
static void copy_part(unsigned char *dst, const unsigned char *src, size_t n, size_t part,
                      uint32_t i)
{
    size_t at = (size_t)i * part;
    size_t len = n - at < part ? n - at : part;
    memcpy(dst + at, src + at, len);
}

/* Takes and copies parts of the current job until none is left. Called and returns with the
 * lock held. */
static void take_parts(struct copy_pool *p)
{
    while (p->next < p->parts) {
        uint32_t i = p->next++;
        unsigned char *dst = p->dst;
        const unsigned char *src = p->src;
        size_t n = p->n, part = p->part;
        pthread_mutex_unlock(&p->lock);
        copy_part(dst, src, n, part, i);
        pthread_mutex_lock(&p->lock);
        if (++p->finished == p->parts) pthread_cond_signal(&p->done);
    }
}

static void *helper_main(void *arg)
{
    struct copy_pool *p = arg;
    pthread_mutex_lock(&p->lock);
    while (!p->stop) {
        if (p->next < p->parts)
            take_parts(p);
        else
            pthread_cond_wait(&p->work, &p->lock);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

cubec_status copy_pool_create(uint32_t helpers, copy_pool **out)
{
    *out = NULL;
    copy_pool *p = calloc(1, sizeof *p);
    if (!p) return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (copy pool)");
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    if (helpers) {
        p->threads = calloc(helpers, sizeof *p->threads);
        if (!p->threads) {
            copy_pool_destroy(p);
            return status_make(CUBEC_OUT_OF_MEMORY, "host out of memory (copy pool)");
        }
    }
    for (uint32_t i = 0; i < helpers; i++) {
        int e = pthread_create(&p->threads[i], NULL, helper_main, p);
        if (e) {
            copy_pool_destroy(p);
            return status_make(CUBEC_INTERNAL, "starting copy thread %u of %u: error %d", i + 1,
                               helpers, e);
        }
        p->helpers++;
    }
    *out = p;
    return NULL;
}

void copy_pool_destroy(copy_pool *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->lock);
    p->stop = 1;
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (uint32_t i = 0; i < p->helpers; i++)
        pthread_join(p->threads[i], NULL);
    free(p->threads);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->work);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

uint32_t copy_pool_helpers(const copy_pool *p)
{
    return p ? p->helpers : 0;
}

void copy_pool_memcpy(copy_pool *p, void *dst, const void *src, size_t n)
{
    if (!n) return; /* memcpy's pointers must be valid even for 0 bytes */
    if (!p || !p->helpers || n < COPY_POOL_MIN_SPLIT) {
        memcpy(dst, src, n);
        return;
    }
    /* One part per thread, cut at cache lines (a multiple of 64 bytes each but the last). */
    uint32_t threads = p->helpers + 1;
    size_t part = (n / threads + 63) & ~(size_t)63;
    pthread_mutex_lock(&p->lock);
    p->dst = dst;
    p->src = src;
    p->n = n;
    p->part = part;
    p->parts = (uint32_t)((n + part - 1) / part);
    p->next = 0;
    p->finished = 0;
    pthread_cond_broadcast(&p->work);
    take_parts(p);
    while (p->finished < p->parts)
        pthread_cond_wait(&p->done, &p->lock);
    p->parts = 0;
    p->next = 0;
    pthread_mutex_unlock(&p->lock);
}
