/* Buffers a launch reaches through device addresses and declares in
 * cubec_launch_desc.address_buffers (GL_EXT_buffer_reference): they are ordered like bound
 * buffers (a read on another stream waits for the launch that writes them), tainted like bound
 * buffers (a lost launch's written ones carry its failure, and a launch that reads a failed one
 * is skipped), and captured into graphs the same way (a replay orders and taints them too).
 *
 * The kernel binds only a marker buffer; it reads `src` and writes `dst` through their addresses
 * and spins long enough (tens of milliseconds on lavapipe) that a read not ordered after it sees
 * dst's bytes from before. Before address_buffers existed, a read on another stream returned
 * those old bytes and a lost launch left dst readable as if written. */
#include "test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* dst[i] = src[i] put through ROUNDS rounds of 8 xorshift steps plus the round number (each
 * round does several steps, which no compiler folds into one); o[i] = i marks the launch. */
static const char mix_src[] =
    "#version 450\n"
    "#extension GL_EXT_buffer_reference : require\n"
    "layout(local_size_x = 64) in;\n"
    "layout(buffer_reference, std430, buffer_reference_align = 4) buffer Words { uint v[]; };\n"
    "layout(std430, binding = 0) writeonly buffer O { uint o[]; };\n"
    "CUBEC_INFO(Words src; Words dst; uint n; uint rounds;)\n"
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  if (i >= info.n) return;\n"
    "  uint x = info.src.v[i];\n"
    "  for (uint r = 0u; r < info.rounds; r++) {\n"
    "    for (uint k = 0u; k < 8u; k++) {\n"
    "      x ^= x << 13u;\n"
    "      x ^= x >> 17u;\n"
    "      x ^= x << 5u;\n"
    "    }\n"
    "    x += r;\n"
    "  }\n"
    "  info.dst.v[i] = x;\n"
    "  o[i] = i;\n"
    "}\n";

typedef struct mix_info {
    uint64_t src, dst;
    uint32_t n, rounds;
} mix_info;

enum { N = 256, ROUNDS = 40000, BYTES = N * sizeof(uint32_t) };

static uint32_t mix(uint32_t x)
{
    for (uint32_t r = 0; r < ROUNDS; r++) {
        for (uint32_t k = 0; k < 8; k++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
        }
        x += r;
    }
    return x;
}

/* A buffer reached by address: its handle, its address, and the guard that keeps it in place. */
typedef struct addressed {
    cubec_buffer h;
    uint64_t address;
    cubec_guard guard;
} addressed;

typedef struct fixture {
    cubec_device *d;
    cubec_kernel k;
    cubec_stream a, b; /* the launches' stream, and another one */
    cubec_buffer o;
    addressed src, dst, dst2;
    uint32_t in[N];
} fixture;

static addressed make_addressed(cubec_device *d, const uint32_t *words)
{
    addressed x;
    ASSERT_OK(cubec_buffer_from(d, 0, words, BYTES, &x.h));
    cubec_raw_buffer raw = CUBEC_RAW_BUFFER_INIT;
    ASSERT_OK(cubec_buffer_raw(d, 0, x.h, &raw, &x.guard));
    assert_true(raw.device_address != 0);
    x.address = raw.device_address;
    return x;
}

static void drop_addressed(cubec_device *d, addressed x)
{
    ASSERT_OK(cubec_guard_release(d, x.guard));
    ASSERT_OK(cubec_buffer_release(d, x.h));
}

/* 1 when the device has buffer device addresses (the fixture is then ready): src holds random
 * words, dst and dst2 zeros. */
static int setup(fixture *f)
{
    memset(f, 0, sizeof *f);
    f->d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(f->d, &info));
    if (!(info.features & CUBEC_FEATURE_BUFFER_DEVICE_ADDRESS)) {
        test_device_close(f->d);
        return 0;
    }
    cubec_kernel_desc kd = CUBEC_KERNEL_DESC_INIT;
    kd.name = "mix";
    kd.glsl = mix_src;
    ASSERT_OK(cubec_kernel_create(f->d, &kd, &f->k));
    ASSERT_OK(cubec_stream_new(f->d, &f->a));
    ASSERT_OK(cubec_stream_new(f->d, &f->b));
    uint32_t seed = 11;
    for (uint32_t i = 0; i < N; i++)
        f->in[i] = test_rand(&seed);
    static const uint32_t zeros[N];
    f->src = make_addressed(f->d, f->in);
    f->dst = make_addressed(f->d, zeros);
    f->dst2 = make_addressed(f->d, zeros);
    ASSERT_OK(cubec_buffer_create(f->d, 0, BYTES, &f->o));
    ASSERT_OK(cubec_sync(f->d, 0));
    return 1;
}

static void teardown(fixture *f)
{
    drop_addressed(f->d, f->src);
    drop_addressed(f->d, f->dst);
    drop_addressed(f->d, f->dst2);
    ASSERT_OK(cubec_buffer_release(f->d, f->o));
    ASSERT_OK(cubec_kernel_destroy(f->d, f->k));
    test_device_close(f->d);
}

/* dst = mix(src) through their addresses on stream `s`, both declared (src read, dst
 * written). */
static cubec_status launch_mix(fixture *f, cubec_stream s, const addressed *src,
                               const addressed *dst)
{
    const mix_info mi = {src->address, dst->address, N, ROUNDS};
    const cubec_buffer reached[2] = {src->h, dst->h};
    cubec_launch_desc ld = CUBEC_LAUNCH_DESC_INIT;
    ld.kernel = f->k;
    ld.buffers = &f->o;
    ld.buffer_count = 1;
    ld.info = &mi;
    ld.info_size = sizeof mi;
    ld.groups[0] = N / 64;
    ld.groups[1] = ld.groups[2] = 1;
    ld.address_buffers = reached;
    ld.address_buffer_count = 2;
    ld.address_reads = 1u << 0;
    ld.address_writes = 1u << 1;
    return cubec_launch(f->d, s, &ld);
}

/* `buf` read on `s` holds mix(want[i]) at every word. */
static void expect_mixed(fixture *f, cubec_stream s, cubec_buffer buf, const uint32_t *want,
                         const char *what)
{
    uint32_t got[N];
    ASSERT_OK(cubec_read(f->d, s, buf, 0, got, BYTES));
    for (uint32_t i = 0; i < N; i++)
        if (got[i] != mix(want[i]))
            fail_msg("%s: word %u is %#x, expected %#x (the read overtook the launch)", what, i,
                     got[i], mix(want[i]));
}

/* A read without cubec_sync, on the launch's stream and on another one, returns what the launch
 * wrote through the address (checked against the CPU). */
static void test_read_after_declared_address_write(void **state)
{
    (void)state;
    fixture f;
    if (!setup(&f)) skip();
    ASSERT_OK(launch_mix(&f, f.a, &f.src, &f.dst));
    expect_mixed(&f, f.b, f.dst.h, f.in, "dst read on another stream");
    ASSERT_OK(launch_mix(&f, f.a, &f.dst, &f.dst2));
    uint32_t mixed[N];
    for (uint32_t i = 0; i < N; i++)
        mixed[i] = mix(f.in[i]);
    expect_mixed(&f, f.a, f.dst2.h, mixed, "dst2 read on the launch's stream");
    teardown(&f);
}

/* The launch's submission is lost: dst, which it writes by address, carries the failure (a read
 * returns it, never the old bytes); a launch that reads dst by address is then skipped and what
 * it writes (dst2 by address, o bound) carries the chain. A host write of dst clears it, and the
 * same launches then run. */
static void test_failure_taints_declared_address_buffers(void **state)
{
    (void)state;
    fixture f;
    if (!setup(&f)) skip();
    ASSERT_OK(launch_mix(&f, f.a, &f.src, &f.dst));
    uint64_t counts[CUBEC_FAULT_KIND_COUNT];
    ASSERT_OK(cubec_fault_get_counts(f.d, counts));
    ASSERT_OK(cubec_fault_inject(f.d, CUBEC_FAULT_SUBMIT, 1));
    ASSERT_ERROR(cubec_flush(f.d, f.a), CUBEC_INTERNAL, "injected fault: submit call #");
    char want[128];
    snprintf(want, sizeof want, "injected fault: submit call #%" PRIu64,
             counts[CUBEC_FAULT_SUBMIT] + 1);
    uint32_t got[N];
    ASSERT_ERROR(cubec_read(f.d, f.b, f.dst.h, 0, got, BYTES), CUBEC_INTERNAL, want);
    ASSERT_OK(cubec_check(f.d, &f.src.h, 1)); /* only read: nothing to carry */

    ASSERT_OK(launch_mix(&f, f.a, &f.dst, &f.dst2));
    ASSERT_ERROR(cubec_read(f.d, f.a, f.dst2.h, 0, got, BYTES), CUBEC_INTERNAL,
                 "launch \"mix\" on stream");
    ASSERT_ERROR(cubec_check(f.d, &f.o, 1), CUBEC_INTERNAL, "was skipped because its input");

    ASSERT_OK(cubec_write(f.d, f.a, f.dst.h, 0, f.in, BYTES));
    ASSERT_OK(launch_mix(&f, f.a, &f.dst, &f.dst2));
    expect_mixed(&f, f.b, f.dst2.h, f.in, "dst2 after dst was written again");
    teardown(&f);
}

/* A captured launch declares its address buffers as a live one does: each replay is ordered
 * before a read on another stream, after a host write of its input, and its failure taints
 * what it writes by address. */
static void test_graph_replay_orders_declared_address_buffers(void **state)
{
    (void)state;
    fixture f;
    if (!setup(&f)) skip();
    ASSERT_OK(cubec_graph_prepare(f.d, f.a));
    ASSERT_OK(launch_mix(&f, f.a, &f.src, &f.dst)); /* the warm-up */
    ASSERT_OK(cubec_graph_begin(f.d, f.a));
    ASSERT_OK(launch_mix(&f, f.a, &f.src, &f.dst));
    cubec_graph g;
    ASSERT_OK(cubec_graph_end(f.d, f.a, &g));
    expect_mixed(&f, f.a, f.dst.h, f.in, "dst after the warm-up");

    uint32_t next[N];
    for (uint32_t i = 0; i < N; i++)
        next[i] = f.in[i] ^ 0x5a5a5a5au;
    ASSERT_OK(cubec_write(f.d, f.a, f.src.h, 0, next, BYTES));
    ASSERT_OK(cubec_graph_replay(f.d, f.a, g));
    expect_mixed(&f, f.b, f.dst.h, next, "dst read on another stream after a replay");

    ASSERT_OK(cubec_fault_inject(f.d, CUBEC_FAULT_SUBMIT, 1));
    ASSERT_ERROR(cubec_graph_replay(f.d, f.a, g), CUBEC_INTERNAL, "injected fault: submit call #");
    uint32_t got[N];
    ASSERT_ERROR(cubec_read(f.d, f.b, f.dst.h, 0, got, BYTES), CUBEC_INTERNAL,
                 "injected fault: submit call #");
    ASSERT_OK(cubec_graph_destroy(f.d, f.a, g));
    teardown(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_after_declared_address_write),
        cmocka_unit_test(test_failure_taints_declared_address_buffers),
        cmocka_unit_test(test_graph_replay_orders_declared_address_buffers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
