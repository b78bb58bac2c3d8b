/* Flags that a test's threads set and wait for (a compile hook holding a build, the test thread
 * releasing it): one mutex and one condition variable, and waits with a time limit so that a
 * hang fails the test instead of stopping it. */
#ifndef CUBEC_TESTS_TEST_FLAGS_H
#define CUBEC_TESTS_TEST_FLAGS_H

#include <pthread.h>

typedef struct test_flags {
    pthread_mutex_t lock;
    pthread_cond_t changed; /* on CLOCK_MONOTONIC */
} test_flags;

void test_flags_init(test_flags *f);
void test_flags_destroy(test_flags *f);
/* With f->lock held: waits at most `seconds` for *flag; returns it. */
int test_flags_wait_locked(test_flags *f, const int *flag, int seconds);
/* The same, taking the lock. */
int test_flags_await(test_flags *f, const int *flag, int seconds);
/* Sets *flag under the lock and wakes every waiter. */
void test_flags_set(test_flags *f, int *flag);

#endif
