/* Host transfers of a guarded buffer (cubec_buffer_raw) come after all earlier work on the
 * stream, as cubec.h promises for every read and write, although that work reaches the buffer
 * only through its device address and names it in no binding. The kernels spin long enough
 * (tens of milliseconds on lavapipe) that a transfer not ordered after them sees the bytes before
 * the kernel wrote them, or changes them before the kernel read them.
 *
 * Before the fix a read waited only for the last launch that bound the buffer: it returned the
 * buffer's first bytes while the kernel was still running. */
#include "server/device.h"
#include "test_util.h"

#include <stdlib.h>
#include <string.h>

/* x = 8 * `rounds` xorshift steps from i + 1 (lavapipe ends a loop after 65535 iterations:
 * each iteration does several steps, which no compiler folds into one); then, reading,
 * o[i] = src[x % n] (an index known only after the spin, so the load cannot move before it), or,
 * writing, dst[i] = x and o[i] = i. The kernel binds only o, never the guarded buffer. */
static const char spin_src[] =
    "#version 450\n"
    "#extension GL_EXT_buffer_reference : require\n"
    "layout(local_size_x = 64) in;\n"
    "layout(buffer_reference, std430, buffer_reference_align = 4) buffer Words { uint v[]; };\n"
    "layout(std430, binding = 0) writeonly buffer O { uint o[]; };\n"
    "CUBEC_INFO(Words src; Words dst; uint n; uint rounds; uint has_src; uint pad;)\n"
    "void main() {\n"
    "  uint i = gl_GlobalInvocationID.x;\n"
    "  if (i >= info.n) return;\n"
    "  uint x = i + 1u;\n"
    "  for (uint r = 0u; r < info.rounds; r++) {\n"
    "    for (uint k = 0u; k < 8u; k++) {\n"
    "      x ^= x << 13u;\n"
    "      x ^= x >> 17u;\n"
    "      x ^= x << 5u;\n"
    "    }\n"
    "    x += r;\n"
    "  }\n"
    "  if (info.has_src != 0u) {\n"
    "    o[i] = info.src.v[x % info.n];\n"
    "  } else {\n"
    "    info.dst.v[i] = x;\n"
    "    o[i] = i;\n"
    "  }\n"
    "}\n";

typedef struct spin_info {
    uint64_t src, dst;
    uint32_t n, rounds, has_src, pad;
} spin_info;

enum { N = 256, ROUNDS = 60000 };

static uint32_t spin(uint32_t i)
{
    uint32_t x = i + 1;
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

typedef struct fixture {
    cubec_device *d;
    cubec_kernel k;
    cubec_buffer guarded, o;
    cubec_raw_buffer raw;
    cubec_guard guard;
} fixture;

/* 1 when the device has buffer device addresses (the fixture is then ready). */
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
    cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "spin", .glsl = spin_src};
    ASSERT_OK(cubec_kernel_create(f->d, &kd, &f->k));
    static const uint32_t zeros[N];
    ASSERT_OK(cubec_buffer_from(f->d, 0, zeros, sizeof zeros, &f->guarded));
    ASSERT_OK(cubec_buffer_create(f->d, 0, N * sizeof(uint32_t), &f->o));
    f->raw = (cubec_raw_buffer)CUBEC_RAW_BUFFER_INIT;
    ASSERT_OK(cubec_buffer_raw(f->d, 0, f->guarded, &f->raw, &f->guard));
    assert_true(f->raw.device_address != 0);
    return 1;
}

static void launch(fixture *f, int reads)
{
    const spin_info si = {reads ? f->raw.device_address : 0,
                          reads ? 0 : f->raw.device_address,
                          N,
                          ROUNDS,
                          (uint32_t)reads,
                          0};
    cubec_launch_desc ld = {.struct_size = sizeof(cubec_launch_desc),
                            .kernel = f->k,
                            .buffers = &f->o,
                            .buffer_count = 1,
                            .info = &si,
                            .info_size = sizeof si,
                            .groups = {N / 64, 1, 1}};
    ASSERT_OK(cubec_launch(f->d, 0, &ld));
}

static void teardown(fixture *f)
{
    ASSERT_OK(cubec_guard_release(f->d, f->guard));
    ASSERT_OK(cubec_buffer_release(f->d, f->guarded));
    ASSERT_OK(cubec_buffer_release(f->d, f->o));
    ASSERT_OK(cubec_kernel_destroy(f->d, f->k));
    test_device_close(f->d);
}

/* A read after a launch that writes the buffer through its address sees what it wrote. */
static void test_read_after_address_write(void **state)
{
    (void)state;
    fixture f;
    if (!setup(&f)) skip();
    launch(&f, 0);
    uint32_t got[N];
    ASSERT_OK(cubec_read(f.d, 0, f.guarded, 0, got, sizeof got));
    for (uint32_t i = 0; i < N; i++)
        if (got[i] != spin(i))
            fail_msg("word %u: %#x, expected %#x (the read overtook the launch)", i, got[i],
                     spin(i));
    teardown(&f);
}

/* The same through cubec_read_async and its event. */
static void test_read_async_after_address_write(void **state)
{
    (void)state;
    fixture f;
    if (!setup(&f)) skip();
    launch(&f, 0);
    uint32_t got[N];
    cubec_event *e = NULL;
    ASSERT_OK(cubec_read_async(f.d, 0, f.guarded, 0, got, sizeof got, &e));
    ASSERT_OK(cubec_event_wait(e));
    cubec_event_free(e);
    for (uint32_t i = 0; i < N; i++)
        if (got[i] != spin(i))
            fail_msg("word %u: %#x, expected %#x (the read overtook the launch)", i, got[i],
                     spin(i));
    teardown(&f);
}

/* A write after a launch that reads the buffer through its address does not change what the
 * launch reads. */
static void test_write_after_address_read(void **state)
{
    (void)state;
    fixture f;
    if (!setup(&f)) skip();
    uint32_t first[N], second[N], got[N];
    uint32_t seed = 7;
    for (uint32_t i = 0; i < N; i++) {
        first[i] = test_rand(&seed);
        second[i] = ~first[i];
    }
    ASSERT_OK(cubec_write(f.d, 0, f.guarded, 0, first, sizeof first));
    launch(&f, 1);
    ASSERT_OK(cubec_write(f.d, 0, f.guarded, 0, second, sizeof second));
    ASSERT_OK(cubec_read(f.d, 0, f.o, 0, got, sizeof got));
    for (uint32_t i = 0; i < N; i++)
        if (got[i] != first[spin(i) % N])
            fail_msg("word %u: the launch read %#x, expected %#x (the write overtook it)", i,
                     got[i], first[spin(i) % N]);
    teardown(&f);
}

/* Barriers recorded while `record` queues `commands` commands and the stream syncs (each is
 * recorded at the sync, into one batch). */
static uint64_t barriers_for(fixture *f, void (*record)(fixture *, cubec_buffer), cubec_buffer o2)
{
    ASSERT_OK(cubec_sync(f->d, 0));
    uint64_t before = server_stats_get(f->d).barriers;
    record(f, o2);
    ASSERT_OK(cubec_sync(f->d, 0));
    return server_stats_get(f->d).barriers - before;
}

/* A launch that writes the guarded buffer by address, a copy of the guarded buffer into o2 (it
 * binds the bytes the launch wrote unseen), and a launch that reads them by address again. */
static void address_then_bound(fixture *f, cubec_buffer o2)
{
    launch(f, 0);
    ASSERT_OK(cubec_copy(f->d, 0, f->guarded, 0, o2, 0, N * sizeof(uint32_t)));
    launch(f, 1);
}

/* Commands after one that reached a guarded buffer by address come after it on the GPU too:
 * while a guard is held each of the three commands is recorded after a barrier to every earlier
 * command (the rule: a command may reach any guarded bytes, so no hazard range can tell), and the
 * copy sees what the first launch wrote. Once the guard is gone the same commands need fewer (the
 * copy binds what the first launch never bound). On lavapipe commands run one after another, so
 * the barriers are counted rather than raced; before the rule no barrier was recorded. */
static void test_commands_after_address_write(void **state)
{
    (void)state;
    fixture f;
    if (!setup(&f)) skip();
    cubec_buffer o2;
    ASSERT_OK(cubec_buffer_create(f.d, 0, N * sizeof(uint32_t), &o2));
    uint64_t held = barriers_for(&f, address_then_bound, o2);
    if (held < 3)
        fail_msg("%llu barriers for 3 commands while a guard is held", (unsigned long long)held);
    uint32_t got[N], o[N];
    ASSERT_OK(cubec_read(f.d, 0, o2, 0, got, sizeof got));
    ASSERT_OK(cubec_read(f.d, 0, f.o, 0, o, sizeof o));
    for (uint32_t i = 0; i < N; i++) {
        if (got[i] != spin(i)) fail_msg("word %u copied: %#x, expected %#x", i, got[i], spin(i));
        if (o[i] != spin(spin(i) % N))
            fail_msg("word %u read by address: %#x, expected %#x", i, o[i], spin(spin(i) % N));
    }
    ASSERT_OK(cubec_guard_release(f.d, f.guard));
    f.guard = (cubec_guard){0};
    uint64_t released = barriers_for(&f, address_then_bound, o2);
    if (released >= held)
        fail_msg("%llu barriers without a guard, %llu with one", (unsigned long long)released,
                 (unsigned long long)held);
    ASSERT_OK(cubec_buffer_release(f.d, o2));
    teardown(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_after_address_write),
        cmocka_unit_test(test_read_async_after_address_write),
        cmocka_unit_test(test_write_after_address_read),
        cmocka_unit_test(test_commands_after_address_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
