/* Regression tests for defects of issue 22 (a second adversarial round), through the public API,
 * on lavapipe with the validation layer on and (test_issue22_defects_a_null) on the null backend;
 * tests that need a kernel to run skip on the null backend.
 *
 *  (a) test_refused_getters_clear_their_outputs: cubec.h says out-parameters are cleared on entry
 *      and written only on success; cubec_memory_window_get, cubec_device_get_info,
 *      cubec_device_peek, cubec_fault_get_counts and cubec_profile_get_method left a refused call's
 *      outputs as the caller had them.
 *  (b) test_compile_queued_reports_a_finished_failure: a queued kernel that failed to compile,
 *      its job finished (so out of the queue's list) before cubec_kernel_compile_queued: the call
 *      returned success. It reports the failure while the kernel's handle lives.
 *  (c) test_tuner_destroy_refused_while_measuring: a candidate that destroyed its tuner freed it
 *      under the cubec_tune_choose running the candidate (heap-use-after-free under ASan), and so
 *      did another thread while the tuner measured. Both are refused naming the tuner, which is
 *      kept and then measures, answers and is destroyed as usual.
 *  (d) test_close_after_timeout_with_disk_cache: with the disk cache on, a kernel built (through
 *      a pipeline cache of the build pool), then a wait that times out (a kernel that never ends
 *      on a GPU, against CUBEC_WAIT_TIMEOUT 0.2 s): closing abandons the driver's objects, and
 *      leaked the build pool's lists with them (LeakSanitizer). Vulkan only.
 *  (e) test_shared_size_uses_the_spec_values: a shared array sized by a specialization constant
 *      was measured with the constant's default. Specialized past maxComputeSharedMemorySize, the
 *      kernel was accepted (the validation layer reported VUID-RuntimeSpirv-Workgroup-06530);
 *      with a default past it and a value that fits, it was refused. The check uses the values
 *      given: the first is refused naming the size and the limit, the second runs.
 *  (f) test_cleanup_backs_a_dry_run_target: an arena (the adaptive preset's, alone here, as in
 *      test_relocation), a buffer made in a dry-run window grows it to a page of the next size,
 *      which gets no memory until a real use;
 *      cubec_memory_cleanup then relocated a live buffer off the outdated page onto that one and
 *      the copy wrote through a null address. The target is backed first; the moved buffer keeps
 *      its bytes.
 *  (g) test_host_free_lands_pending_reads / test_host_unregister_lands_pending_reads: a
 *      cubec_read_async into pinned (or registered) memory is pending, its bytes to be copied in
 *      when it completes (unified memory, the source not yet written), and the program frees the
 *      pinned memory (or unregisters the range): the call returned at once and the completion
 *      wrote into freed memory (heap-use-after-free on lavapipe under ASan, SIGSEGV on the null
 *      backend). As cubec.h says, the call comes after the transfers that use the range: the
 *      read's bytes land first (checked in the registered memory right after the call), and its
 *      event then reports success without touching the memory again.
 */
#include "test_util.h"
#include "uint_kernels.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int null_backend(void)
{
    const char *b = getenv("CUBEC_BACKEND");
    return b && strcmp(b, "null") == 0;
}

/* ---- (a) refused getters ------------------------------------------------------------------ */

#define JUNK 0xa5u

static int all_zero(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i]) return 0;
    return 1;
}

static void test_refused_getters_clear_their_outputs(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    /* A stream the device never handed out: the call is refused after its arguments pass. */
    const cubec_stream bad_stream = 0x7777;
    cubec_memory_mode mode;
    uint32_t depth;
    memset(&mode, JUNK, sizeof mode);
    memset(&depth, JUNK, sizeof depth);
    ASSERT_ERROR(cubec_memory_window_get(d, bad_stream, &mode, &depth), CUBEC_INVALID_ARGUMENT,
                 "cubec_memory_window_get");
    assert_int_equal(mode, CUBEC_MEMORY_MODE_AUTO);
    assert_int_equal(depth, 0);
    memset(&mode, JUNK, sizeof mode);
    memset(&depth, JUNK, sizeof depth);
    ASSERT_ERROR(cubec_memory_window_get(NULL, CUBEC_STREAM_CURRENT, &mode, &depth),
                 CUBEC_INVALID_ARGUMENT, "device");
    assert_int_equal(mode, CUBEC_MEMORY_MODE_AUTO);
    assert_int_equal(depth, 0);

    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    memset(&info, JUNK, sizeof info);
    info.struct_size = sizeof info;
    ASSERT_ERROR(cubec_device_get_info(NULL, &info), CUBEC_INVALID_ARGUMENT, "device is NULL");
    assert_true(info.struct_size == sizeof info &&
                all_zero(info.name, sizeof info - offsetof(cubec_device_info, name)));
    uint32_t count = 0;
    ASSERT_OK(cubec_device_get_count(&count));
    memset(&info, JUNK, sizeof info);
    info.struct_size = sizeof info;
    ASSERT_ERROR(cubec_device_peek(count + 5u, &info), CUBEC_INVALID_ARGUMENT, "cubec_device_peek");
    assert_true(info.struct_size == sizeof info &&
                all_zero(info.name, sizeof info - offsetof(cubec_device_info, name)));

    uint64_t counts[CUBEC_FAULT_KIND_COUNT];
    memset(counts, JUNK, sizeof counts);
    ASSERT_ERROR(cubec_fault_get_counts(NULL, counts), CUBEC_INVALID_ARGUMENT, "device");
    assert_true(all_zero(counts, sizeof counts));

    cubec_timing timing;
    memset(&timing, JUNK, sizeof timing);
    ASSERT_ERROR(cubec_profile_get_method(NULL, &timing), CUBEC_INVALID_ARGUMENT, "device");
    assert_int_equal(timing, 0);

    /* And each still answers when the call is good. */
    ASSERT_OK(cubec_memory_window_begin(d, CUBEC_STREAM_CURRENT, CUBEC_MEMORY_MODE_PERSISTENT));
    ASSERT_OK(cubec_memory_window_get(d, CUBEC_STREAM_CURRENT, &mode, &depth));
    assert_int_equal(mode, CUBEC_MEMORY_MODE_PERSISTENT);
    assert_int_equal(depth, 1);
    ASSERT_OK(cubec_memory_window_end(d, CUBEC_STREAM_CURRENT));
    ASSERT_OK(cubec_device_get_info(d, &info));
    assert_true(info.name[0] != '\0');
    ASSERT_OK(cubec_profile_get_method(d, &timing));
    assert_true(timing == CUBEC_TIMING_DEVICE || timing == CUBEC_TIMING_SYSTEM);
    test_device_close(d);
}

/* ---- (b) the compile queue ----------------------------------------------------------------- */

static const char broken_src[] = "#version 450\n"
                                 "layout(local_size_x = 64) in;\n"
                                 "layout(std430, binding = 0) buffer Y { uint y[]; };\n"
                                 "void main() { y[gl_GlobalInvocationID.x] = undeclared_thing; }\n";
static const char good_src[] = "#version 450\n"
                               "layout(local_size_x = 64) in;\n"
                               "layout(std430, binding = 0) buffer Y { uint y[]; };\n"
                               "void main() { y[gl_GlobalInvocationID.x] = 7u; }\n";

static void test_compile_queued_reports_a_finished_failure(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    const cubec_kernel_desc bd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "broken.comp", .glsl = broken_src};
    const cubec_kernel_desc gd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "good.comp", .glsl = good_src};
    cubec_kernel broken, good;
    ASSERT_OK(cubec_kernel_queue(d, &bd, &broken));
    /* The wait returns once the job finished: it has left the queue's list. */
    ASSERT_ERROR(cubec_kernel_wait(d, broken), CUBEC_COMPILE_FAILED, "undeclared_thing");
    ASSERT_ERROR(cubec_kernel_compile_queued(d), CUBEC_COMPILE_FAILED,
                 "1 of the 1 kernels queued did not compile");
    /* With a good kernel queued after it: both waited for, the failure still reported, once. */
    ASSERT_OK(cubec_kernel_queue(d, &gd, &good));
    cubec_kernel again;
    ASSERT_OK(cubec_kernel_queue(d, &bd, &again));
    ASSERT_ERROR(cubec_kernel_compile_queued(d), CUBEC_COMPILE_FAILED, "undeclared_thing");
    ASSERT_OK(cubec_kernel_wait(d, good));
    /* The error stays with the kernels; once their handles are gone nothing failed is left. */
    ASSERT_ERROR(cubec_kernel_wait(d, broken), CUBEC_COMPILE_FAILED, "undeclared_thing");
    ASSERT_OK(cubec_kernel_destroy(d, broken));
    ASSERT_OK(cubec_kernel_destroy(d, again));
    ASSERT_OK(cubec_kernel_compile_queued(d));
    ASSERT_OK(cubec_kernel_destroy(d, good));
    test_device_close(d);
}

/* ---- (c) destroying a tuner in use ------------------------------------------------------- */

typedef struct tune_ctx {
    cubec_tuner *tuner;
    cubec_buffer b;
    uint32_t runs;
    cubec_status from_candidate; /* the candidate's destroy, on its first run */
    /* The other thread's destroy, while the first run of the candidate waits for it. */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int measuring, destroyed_elsewhere;
    cubec_status from_thread;
} tune_ctx;

static cubec_status destroying_candidate(cubec_device *d, cubec_stream s, void *user)
{
    tune_ctx *c = user;
    if (c->runs++ == 0) c->from_candidate = cubec_tuner_destroy(c->tuner);
    return cubec_fill(d, s, c->b, 0, 256, c->runs);
}

static cubec_status waiting_candidate(cubec_device *d, cubec_stream s, void *user)
{
    tune_ctx *c = user;
    if (c->runs++ == 0) {
        pthread_mutex_lock(&c->lock);
        c->measuring = 1;
        pthread_cond_broadcast(&c->changed);
        while (!c->destroyed_elsewhere)
            pthread_cond_wait(&c->changed, &c->lock);
        pthread_mutex_unlock(&c->lock);
    }
    return cubec_fill(d, s, c->b, 0, 256, c->runs);
}

static void *destroy_when_measuring(void *arg)
{
    tune_ctx *c = arg;
    pthread_mutex_lock(&c->lock);
    while (!c->measuring)
        pthread_cond_wait(&c->changed, &c->lock);
    pthread_mutex_unlock(&c->lock);
    cubec_status st = cubec_tuner_destroy(c->tuner);
    pthread_mutex_lock(&c->lock);
    c->from_thread = st;
    c->destroyed_elsewhere = 1;
    pthread_cond_broadcast(&c->changed);
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

static void choose_with(cubec_device *d, tune_ctx *c,
                        cubec_status (*run)(cubec_device *, cubec_stream, void *))
{
    const cubec_tuner_desc td = {.struct_size = sizeof(cubec_tuner_desc),
                                 .name = "doomed",
                                 .warmup = 1,
                                 .samples = 2,
                                 .memory_only = 1};
    ASSERT_OK(cubec_tuner_create(d, &td, &c->tuner));
    const cubec_tune_candidate cands[2] = {{"one", run, c}, {"two", run, c}};
    const cubec_tune_request req = {.struct_size = sizeof(cubec_tune_request),
                                    .key = "k",
                                    .candidates = cands,
                                    .candidate_count = 2};
    cubec_tune_result r = CUBEC_TUNE_RESULT_INIT;
    ASSERT_OK(cubec_tune_choose(c->tuner, CUBEC_STREAM_CURRENT, &req, &r));
    assert_int_equal(r.source, CUBEC_TUNE_MEASURED);
    assert_true(r.index < 2);
    /* Both candidates ran every warm-up and sample round: the tuner was not torn down. */
    assert_int_equal(c->runs, 2u * (1u + 2u));
    cubec_tune_outcome o = CUBEC_TUNE_OUTCOME_INIT;
    ASSERT_OK(cubec_tune_outcome_get(c->tuner, 1, &o));
    assert_int_equal(o.state, CUBEC_TUNE_TIMED);
    ASSERT_OK(cubec_tuner_destroy(c->tuner)); /* idle now: destroyed */
}

static void test_tuner_destroy_refused_while_measuring(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    tune_ctx c = {0};
    pthread_mutex_init(&c.lock, NULL);
    pthread_cond_init(&c.changed, NULL);
    ASSERT_OK(cubec_buffer_create(d, CUBEC_STREAM_CURRENT, 256, &c.b));

    choose_with(d, &c, destroying_candidate);
    ASSERT_ERROR(c.from_candidate, CUBEC_INVALID_ARGUMENT,
                 "cubec_tuner_destroy: a candidate of tuner 'doomed' destroyed that tuner");

    c.runs = 0;
    pthread_t other;
    assert_int_equal(pthread_create(&other, NULL, destroy_when_measuring, &c), 0);
    choose_with(d, &c, waiting_candidate);
    assert_int_equal(pthread_join(other, NULL), 0);
    ASSERT_ERROR(c.from_thread, CUBEC_INVALID_ARGUMENT,
                 "cubec_tuner_destroy: tuner 'doomed' is in use by 1 call(s)");

    ASSERT_OK(cubec_buffer_release(d, c.b));
    pthread_cond_destroy(&c.changed);
    pthread_mutex_destroy(&c.lock);
    test_device_close(d);
}

/* ---- (d) close after a timeout, disk cache on --------------------------------------------- */

/* Spins until v[0] is 12345, which nothing writes (see test_issue11_defects.c): on lavapipe,
 * which ends any loop after 65535 iterations, it runs for seconds. */
static const char spin_src[] = "#version 450\n"
                               "layout(local_size_x = 64) in;\n"
                               "layout(std430, binding = 0) buffer V { uint v[]; };\n"
                               "CUBEC_INFO(uint n; uint mul; uint add;)\n"
                               "void main() {\n"
                               "  uint i = gl_GlobalInvocationID.x;\n"
                               "  while (atomicAdd(v[0], 0u) != 12345u) {}\n"
                               "  v[i + 1u] = i * info.mul + info.add;\n"
                               "}\n";

static void test_close_after_timeout_with_disk_cache(void **state)
{
    (void)state;
    if (null_backend()) skip(); /* no kernel runs there, and no driver pipeline cache */
    char dir[256];
    test_temp_dir(dir, sizeof dir, "cubec_issue22_timeout");
    setenv("CUBEC_CACHE_DIR", dir, 1);
    setenv("CUBEC_WAIT_TIMEOUT", "0.2", 1);
    cubec_device *d = test_device_open();
    unsetenv("CUBEC_WAIT_TIMEOUT");
    setenv("CUBEC_CACHE_DIR", "none", 1);
    cubec_kernel spin;
    const cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "spin", .glsl = spin_src};
    ASSERT_OK(cubec_kernel_create(d, &kd, &spin));
    const uint32_t words = 64u * 64u;
    cubec_buffer v;
    ASSERT_OK(cubec_buffer_create(d, CUBEC_STREAM_CURRENT, (words + 1u) * 4u, &v));
    ASSERT_OK(cubec_fill(d, CUBEC_STREAM_CURRENT, v, 0, (words + 1u) * 4u, 0));
    ASSERT_OK(cubec_sync(d, CUBEC_STREAM_CURRENT));
    ASSERT_OK(busy_launch(d, CUBEC_STREAM_CURRENT, spin, v, words, 1));
    ASSERT_ERROR(cubec_sync(d, CUBEC_STREAM_CURRENT), CUBEC_TIMEOUT, "within 0.2 s");
    test_device_close(d); /* LeakSanitizer checks at exit that nothing of cubec's is left */
    test_remove_tree(dir);
}

/* ---- (e) shared arrays sized by specialization constants --------------------------------- */

#define SHARED_WORDS 64u

/* A shared array of N words, N a specialization constant whose default is `default_n`; each of
 * the 64 invocations stores into it and reads its neighbour's word back. */
static void shared_src(char *out, size_t cap, uint32_t default_n)
{
    snprintf(out, cap,
             "#version 450\n"
             "layout(local_size_x = 64) in;\n"
             "layout(constant_id = 3) const uint N = %uu;\n"
             "shared uint s[N];\n"
             "layout(std430, binding = 0) buffer Y { uint y[]; };\n"
             "void main() {\n"
             "  uint i = gl_LocalInvocationID.x;\n"
             "  s[i] = i * 3u + 1u;\n"
             "  barrier();\n"
             "  y[i] = s[(i + 1u) %% 64u] + N;\n"
             "}\n",
             default_n);
}

static void test_shared_size_uses_the_spec_values(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    const uint32_t too_many = info.max_shared_memory_size / 4u + 1024u; /* words */
    char src[1024], want[160];

    /* Default fits, the value given does not: refused, with the specialized size. */
    shared_src(src, sizeof src, SHARED_WORDS);
    cubec_spec_constant big = {.id = 3, .value = too_many};
    cubec_kernel_desc kd = {.struct_size = sizeof(cubec_kernel_desc),
                            .name = "shared_big",
                            .glsl = src,
                            .spec_constants = &big,
                            .spec_constant_count = 1};
    cubec_kernel k;
    snprintf(want, sizeof want,
             "%llu bytes of shared (Workgroup) memory exceed the device limit of %u bytes",
             (unsigned long long)too_many * 4u, info.max_shared_memory_size);
    ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_UNSUPPORTED, want);
    /* Unspecialized, the same source fits. */
    kd.spec_constant_count = 0;
    kd.spec_constants = NULL;
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    ASSERT_OK(cubec_kernel_destroy(d, k));

    /* Default too large, the value given fits: accepted, and it runs with SHARED_WORDS. */
    shared_src(src, sizeof src, too_many);
    cubec_spec_constant fits = {.id = 3, .value = SHARED_WORDS};
    kd = (cubec_kernel_desc){.struct_size = sizeof(cubec_kernel_desc),
                             .name = "shared_fits",
                             .glsl = src,
                             .spec_constants = &fits,
                             .spec_constant_count = 1};
    ASSERT_OK(cubec_kernel_create(d, &kd, &k));
    cubec_buffer y;
    ASSERT_OK(cubec_buffer_create(d, CUBEC_STREAM_CURRENT, SHARED_WORDS * 4u, &y));
    ASSERT_OK(cubec_fill(d, CUBEC_STREAM_CURRENT, y, 0, SHARED_WORDS * 4u, 0));
    const cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                                  .kernel = k,
                                  .buffers = &y,
                                  .buffer_count = 1,
                                  .groups = {1, 1, 1}};
    ASSERT_OK(cubec_launch(d, CUBEC_STREAM_CURRENT, &ld));
    uint32_t got[SHARED_WORDS];
    ASSERT_OK(cubec_read(d, CUBEC_STREAM_CURRENT, y, 0, got, sizeof got));
    for (uint32_t i = 0; i < SHARED_WORDS && !null_backend(); i++)
        assert_int_equal(got[i], ((i + 1u) % 64u) * 3u + 1u + SHARED_WORDS);
    /* Unspecialized, it is refused with its default's size. */
    kd.spec_constant_count = 0;
    kd.spec_constants = NULL;
    ASSERT_ERROR(cubec_kernel_create(d, &kd, &k), CUBEC_UNSUPPORTED, "exceed the device limit");
    ASSERT_OK(cubec_buffer_release(d, y));
    test_device_close(d);
}

/* ---- (f) relocation onto a dry run's page ------------------------------------------------- */

#define MiB (1024ull * 1024ull)

static void test_cleanup_backs_a_dry_run_target(void **state)
{
    (void)state;
    unsetenv("CUBEC_MEMORY_PRESET");
    setenv("CUBEC_MEMORY_POOLS", "arena", 1);
    cubec_device *d = test_device_open();
    unsetenv("CUBEC_MEMORY_POOLS");
    cubec_stream s;
    ASSERT_OK(cubec_stream_new(d, &s));
    /* On the arena's first page (2 MiB). */
    const uint64_t a_size = MiB / 8;
    uint8_t *want = malloc(a_size), *got = malloc(a_size);
    assert_non_null(want);
    assert_non_null(got);
    uint32_t rng = 22;
    for (uint64_t i = 0; i < a_size; i++)
        want[i] = (uint8_t)test_rand(&rng);
    cubec_buffer a, grow;
    ASSERT_OK(cubec_buffer_create(d, s, a_size, &a));
    ASSERT_OK(cubec_write(d, s, a, 0, want, a_size));
    ASSERT_OK(cubec_sync(d, s));
    /* In a dry run: the arena grows to 4 MiB pages with a page that has no memory yet. */
    ASSERT_OK(cubec_run_window_begin(d, s, CUBEC_RUN_DRY));
    ASSERT_OK(cubec_buffer_create(d, s, 2 * MiB + 1, &grow));
    ASSERT_OK(cubec_run_window_end(d, s));
    cubec_memory_report r = CUBEC_MEMORY_REPORT_INIT;
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    uint32_t arena = 0;
    while (arena < r.pool_count && strcmp(r.pools[arena].kind, "arena") != 0)
        arena++;
    assert_true(arena < r.pool_count);
    assert_int_equal(r.pools[arena].page_size, 4 * MiB);
    assert_int_equal(r.pools[arena].outdated_pages, 1);
    /* a moves onto the dry run's page, which must get memory before the copy. */
    ASSERT_OK(cubec_memory_cleanup(d, s));
    ASSERT_OK(cubec_memory_report_get(d, s, &r));
    assert_int_equal(r.pools[arena].outdated_pages, 0);
    assert_int_equal(r.pools[arena].relocations, 1);
    ASSERT_OK(cubec_read(d, s, a, 0, got, a_size));
    assert_memory_equal(got, want, a_size);
    /* The dry run's buffer is an ordinary one on that page now. */
    ASSERT_OK(cubec_fill(d, s, grow, 0, 2 * MiB, 0x01020304u));
    uint32_t word = 0;
    ASSERT_OK(cubec_read(d, s, grow, MiB, &word, 4));
    assert_int_equal(word, 0x01020304u);
    ASSERT_OK(cubec_buffer_release(d, a));
    ASSERT_OK(cubec_buffer_release(d, grow));
    free(want);
    free(got);
    test_device_close(d);
}

/* ---- (g) freeing host memory a read is landing in ----------------------------------------- */

#define READ_WORDS 4096u
#define READ_FILL 0x5eed1234u

/* A buffer whose last write (a fill of READ_FILL) is queued, not yet waited for, so that a
 * cubec_read_async of it now copies into `dst` only when it completes. */
static cubec_event *pending_read(cubec_device *d, cubec_buffer *b, void *dst)
{
    ASSERT_OK(cubec_buffer_create(d, CUBEC_STREAM_CURRENT, READ_WORDS * 4u, b));
    ASSERT_OK(cubec_fill(d, CUBEC_STREAM_CURRENT, *b, 0, READ_WORDS * 4u, READ_FILL));
    cubec_event *e = NULL;
    ASSERT_OK(cubec_read_async(d, CUBEC_STREAM_CURRENT, *b, 0, dst, READ_WORDS * 4u, &e));
    return e;
}

static void expect_filled(const uint32_t *words, const char *when)
{
    for (uint32_t i = 0; i < READ_WORDS; i++)
        if (words[i] != READ_FILL)
            fail_msg("%s: word %u is 0x%08x, not the read's 0x%08x", when, i, words[i], READ_FILL);
}

static void test_host_free_lands_pending_reads(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    void *pinned = NULL;
    cubec_status st = cubec_host_alloc(d, READ_WORDS * 4u, &pinned);
    if (cubec_status_code(st) == CUBEC_UNSUPPORTED) {
        /* A device without host memory it reads directly (the webgpu backend's) has no pinned
         * memory to free; the registered kind below still runs. */
        print_message("skipped: %s\n", cubec_status_message(st));
        cubec_status_free(st);
        test_device_close(d);
        skip();
    }
    ASSERT_OK(st);
    memset(pinned, 0, READ_WORDS * 4u);
    cubec_buffer b;
    cubec_event *e = pending_read(d, &b, pinned);
    ASSERT_OK(cubec_host_free(d, pinned)); /* the read lands before the memory goes */
    ASSERT_OK(cubec_event_wait(e));        /* done already: nothing written any more */
    cubec_event_free(e);
    /* Twice: an event freed without a wait, too. */
    ASSERT_OK(cubec_host_alloc(d, READ_WORDS * 4u, &pinned));
    cubec_buffer b2;
    e = pending_read(d, &b2, pinned);
    ASSERT_OK(cubec_host_free(d, pinned));
    cubec_event_free(e);
    ASSERT_OK(cubec_buffer_release(d, b));
    ASSERT_OK(cubec_buffer_release(d, b2));
    test_device_close(d);
}

static void test_host_unregister_lands_pending_reads(void **state)
{
    (void)state;
    cubec_device *d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(d, &info));
    const uint64_t align = info.host_register_alignment;
    const uint64_t bytes = (READ_WORDS * 4u + align - 1) / align * align;
    uint32_t *mem = aligned_alloc(align, bytes);
    assert_non_null(mem);
    memset(mem, 0, bytes);
    ASSERT_OK(cubec_host_register(d, mem, bytes));
    cubec_buffer b;
    cubec_event *e = pending_read(d, &b, mem);
    ASSERT_OK(cubec_host_unregister(d, mem));
    expect_filled(mem, "right after cubec_host_unregister");
    memset(mem, 0, bytes); /* the program's memory again: the event must not write it */
    ASSERT_OK(cubec_event_wait(e));
    cubec_event_free(e);
    for (uint32_t i = 0; i < READ_WORDS; i++)
        assert_int_equal(mem[i], 0);
    free(mem);
    ASSERT_OK(cubec_buffer_release(d, b));
    test_device_close(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused_getters_clear_their_outputs),
        cmocka_unit_test(test_compile_queued_reports_a_finished_failure),
        cmocka_unit_test(test_tuner_destroy_refused_while_measuring),
        cmocka_unit_test(test_shared_size_uses_the_spec_values),
        cmocka_unit_test(test_cleanup_backs_a_dry_run_target),
        cmocka_unit_test(test_host_free_lands_pending_reads),
        cmocka_unit_test(test_host_unregister_lands_pending_reads),
        /* Last: the abandoned kernel spins on lavapipe's threads for seconds after it. */
        cmocka_unit_test(test_close_after_timeout_with_disk_cache),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
