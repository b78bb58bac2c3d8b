#include "test_flags.h"

#include <errno.h>
#include <time.h>

void test_flags_init(test_flags *f)
{
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    /* Deadlines on the monotonic clock: a wall-clock step must not end a wait early or late. */
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&f->changed, &attr);
    pthread_condattr_destroy(&attr);
    pthread_mutex_init(&f->lock, NULL);
}

void test_flags_destroy(test_flags *f)
{
    pthread_cond_destroy(&f->changed);
    pthread_mutex_destroy(&f->lock);
}

int test_flags_wait_locked(test_flags *f, const int *flag, int seconds)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += seconds;
    while (!*flag)
        if (pthread_cond_timedwait(&f->changed, &f->lock, &until) == ETIMEDOUT) break;
    return *flag;
}

int test_flags_await(test_flags *f, const int *flag, int seconds)
{
    pthread_mutex_lock(&f->lock);
    int seen = test_flags_wait_locked(f, flag, seconds);
    pthread_mutex_unlock(&f->lock);
    return seen;
}

void test_flags_set(test_flags *f, int *flag)
{
    pthread_mutex_lock(&f->lock);
    *flag = 1;
    pthread_cond_broadcast(&f->changed);
    pthread_mutex_unlock(&f->lock);
}
