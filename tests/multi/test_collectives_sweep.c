/* Every collective within a process (all-reduce, broadcast, all-gather, reduce-scatter) x dtype
 * (f32, f16, i32) x op x size class (0, 1, n - 1, not a multiple of n, past one peer-copy chunk)
 * over two and three opens of the lavapipe device, each checked word by word against a CPU
 * reference computed here from every rank's known input, guard elements past the range included
 * (they keep their bits: an f16 range that ends in the middle of a word leaves the other half).
 * The peer-copy chunk is set to 64 KiB ([multi] chunk_bytes) so that the largest size crosses
 * several chunks on every ring step. Inputs are multiples of 1/4 of small magnitude, so that every
 * order of summation is exact and the reference need not know the ring's. */
#include "launch_util.h"
#include "test_util.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { RANKS = 3, GUARD = 3, CHUNK = 64 << 10 };

typedef enum kind { ALL_REDUCE, BROADCAST, ALL_GATHER, REDUCE_SCATTER } kind;
static const char *const kind_names[] = {"all_reduce", "broadcast", "all_gather", "reduce_scatter"};

typedef struct fixture {
    cubec_device *d[RANKS];
    cubec_comm *comm[RANKS + 1]; /* comm[n]: over d[0 .. n-1] */
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    for (int r = 0; r < RANKS; r++)
        f->d[r] = test_device_open();
    for (uint32_t n = 2; n <= RANKS; n++)
        ASSERT_OK(cubec_comm_create(f->d, n, &f->comm[n]));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    for (int n = 2; n <= RANKS; n++)
        cubec_comm_destroy(f->comm[n]);
    for (int r = RANKS - 1; r >= 0; r--)
        test_device_close(f->d[r]);
    free(f);
    return 0;
}

/* binary16 of a float that has one (the inputs and their sums here all do), and back. */
static uint16_t half_bits(float v)
{
    uint32_t b;
    memcpy(&b, &v, 4);
    uint16_t sign = (uint16_t)((b >> 16) & 0x8000u);
    if ((b & 0x7fffffffu) == 0) return sign;
    int e = (int)((b >> 23) & 0xffu) - 127 + 15;
    if (e <= 0 || e >= 31 || (b & 0x1fffu)) fail_msg("%g has no exact binary16 normal", (double)v);
    return (uint16_t)(sign | (uint32_t)e << 10 | ((b >> 13) & 0x3ffu));
}

static float half_value(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0 && m == 0) {
        float z;
        memcpy(&z, &sign, 4);
        return z;
    }
    if (e == 0 || e == 31) fail_msg("binary16 0x%04x is not a normal number", h);
    uint32_t b = sign | (e + 112u) << 23 | m << 13;
    float v;
    memcpy(&v, &b, 4);
    return v;
}

static uint32_t esize(cubec_dtype t)
{
    return t == CUBEC_DTYPE_F16 ? 2 : 4;
}

/* Bytes of a buffer of `elems` elements: whole words, as the collectives ask. */
static uint64_t bytes_of(cubec_dtype t, uint64_t elems)
{
    return (elems * esize(t) + 3) / 4 * 4;
}

static uint32_t get(const void *buf, cubec_dtype t, uint64_t i)
{
    if (t == CUBEC_DTYPE_F16) {
        uint16_t h;
        memcpy(&h, (const char *)buf + i * 2, 2);
        return h;
    }
    uint32_t w;
    memcpy(&w, (const char *)buf + i * 4, 4);
    return w;
}

static void set(void *buf, cubec_dtype t, uint64_t i, uint32_t v)
{
    if (t == CUBEC_DTYPE_F16) {
        uint16_t h = (uint16_t)v;
        memcpy((char *)buf + i * 2, &h, 2);
    } else {
        memcpy((char *)buf + i * 4, &v, 4);
    }
}

/* Rank r's element i: a multiple of 1/4 in [-25, 25] for the floats, any word for i32. */
static uint32_t input(cubec_dtype t, uint32_t r, uint64_t i)
{
    uint32_t h = (uint32_t)(i * 2654435761u) ^ (r * 0x9e3779b9u);
    if (t == CUBEC_DTYPE_I32) return h * 0x85ebca6bu + r;
    float v = (float)((int)(h % 201u) - 100) * 0.25f;
    if (t == CUBEC_DTYPE_F16) return half_bits(v);
    uint32_t w;
    memcpy(&w, &v, 4);
    return w;
}

/* What a guard element past the range holds, and must still hold after the collective. */
static uint32_t guard(cubec_dtype t, uint32_t r, uint64_t i)
{
    if (t == CUBEC_DTYPE_F16) return 0x7c01u + (uint32_t)(i + r) % 64u; /* NaNs: never a result */
    return 0xdead0000u + (uint32_t)i * 16u + r;
}

static uint32_t reduce(cubec_dtype t, cubec_reduce_op op, uint32_t a, uint32_t b)
{
    if (t == CUBEC_DTYPE_I32) {
        if (op == CUBEC_REDUCE_SUM) return a + b;
        return (int32_t)a > (int32_t)b ? a : b;
    }
    float x, y;
    if (t == CUBEC_DTYPE_F16) {
        x = half_value((uint16_t)a);
        y = half_value((uint16_t)b);
    } else {
        memcpy(&x, &a, 4);
        memcpy(&y, &b, 4);
    }
    float z = op == CUBEC_REDUCE_SUM ? x + y : (x > y ? x : y);
    if (t == CUBEC_DTYPE_F16) return half_bits(z);
    uint32_t w;
    memcpy(&w, &z, 4);
    return w;
}

static void shard(uint32_t n, uint64_t total, uint32_t r, uint64_t *off, uint64_t *cnt)
{
    uint64_t base = total / n, extra = total % n;
    *cnt = base + (r < extra ? 1 : 0);
    *off = r * base + (r < extra ? r : extra);
}

/* The rank whose shard holds element i. */
static uint32_t owner_of(uint32_t n, uint64_t total, uint64_t i)
{
    for (uint32_t q = 0; q < n; q++) {
        uint64_t o, c;
        shard(n, total, q, &o, &c);
        if (i >= o && i < o + c) return q;
    }
    fail_msg("element %" PRIu64 " of %" PRIu64 " is in no shard", i, total);
    return 0;
}

/* A buffer of `elems` elements plus GUARD guards: data[i] for i < elems (or guards where data is
 * NULL), guards after. */
static void *host_buffer(cubec_dtype t, uint32_t r, uint64_t elems, const uint32_t *data,
                         uint64_t *out_bytes)
{
    uint64_t bytes = bytes_of(t, elems + GUARD);
    void *h = calloc(1, bytes);
    for (uint64_t i = 0; i < elems + GUARD; i++)
        set(h, t, i, data && i < elems ? data[i] : guard(t, r, i));
    *out_bytes = bytes;
    return h;
}

static void run_case(fixture *f, kind k, uint32_t n, uint64_t count, cubec_dtype t,
                     cubec_reduce_op op, uint32_t root)
{
    cubec_comm *comm = f->comm[n];
    cubec_stream s[RANKS];
    cubec_buffer in[RANKS], out[RANKS];
    void *want[RANKS];
    uint64_t out_bytes[RANKS];
    uint32_t *vals = malloc((count + 1) * 4), *acc = malloc((count + 1) * 4);
    /* The reference over the whole range: acc[i] = op over ranks of input(r, i). */
    for (uint64_t i = 0; i < count; i++) {
        acc[i] = input(t, 0, i);
        for (uint32_t r = 1; r < n; r++)
            acc[i] = reduce(t, op, acc[i], input(t, r, i));
    }
    for (uint32_t r = 0; r < n; r++) {
        s[r] = new_stream(f->d[r]);
        uint64_t off, cnt, in_elems, out_elems, bytes;
        shard(n, count, r, &off, &cnt);
        in_elems = k == ALL_GATHER ? cnt : count;
        out_elems = k == REDUCE_SCATTER ? cnt : count;
        /* Inputs: rank r's elements (all-gather: of its shard, from the first). */
        for (uint64_t i = 0; i < in_elems; i++)
            vals[i] = input(t, r, k == ALL_GATHER ? off + i : i);
        void *h = host_buffer(t, r, in_elems, vals, &bytes);
        ASSERT_OK(cubec_buffer_from(f->d[r], s[r], h, bytes, &in[r]));
        free(h);
        if (k == ALL_REDUCE || k == BROADCAST) {
            out[r] = in[r];
        } else {
            h = host_buffer(t, r, out_elems, NULL, &bytes);
            ASSERT_OK(cubec_buffer_from(f->d[r], s[r], h, bytes, &out[r]));
            free(h);
        }
        for (uint64_t i = 0; i < out_elems; i++) {
            switch (k) {
            case ALL_REDUCE: vals[i] = acc[i]; break;
            case BROADCAST: vals[i] = input(t, root, i); break;
            case ALL_GATHER: vals[i] = input(t, owner_of(n, count, i), i); break;
            case REDUCE_SCATTER: vals[i] = acc[off + i]; break;
            }
        }
        want[r] = host_buffer(t, r, out_elems, vals, &out_bytes[r]);
    }
    switch (k) {
    case ALL_REDUCE: ASSERT_OK(cubec_comm_all_reduce(comm, in, s, count, t, op)); break;
    case BROADCAST: ASSERT_OK(cubec_comm_broadcast(comm, in, s, count, t, root)); break;
    case ALL_GATHER: ASSERT_OK(cubec_comm_all_gather(comm, in, out, s, count, t)); break;
    case REDUCE_SCATTER:
        ASSERT_OK(cubec_comm_reduce_scatter(comm, in, out, s, count, t, op));
        break;
    }
    for (uint32_t r = 0; r < n; r++) {
        void *got = malloc(out_bytes[r]);
        ASSERT_OK(cubec_read(f->d[r], s[r], out[r], 0, got, out_bytes[r]));
        if (memcmp(got, want[r], out_bytes[r]) != 0) {
            uint64_t i = 0;
            while (get(got, t, i) == get(want[r], t, i))
                i++;
            fail_msg("%s, %u ranks, count %" PRIu64 ", dtype %d, op %d, root %u: rank %u element "
                     "%" PRIu64 " is 0x%08x, want 0x%08x",
                     kind_names[k], n, count, (int)t, (int)op, root, r, i, get(got, t, i),
                     get(want[r], t, i));
        }
        free(got);
        free(want[r]);
        ASSERT_OK(cubec_buffer_release(f->d[r], in[r]));
        if (out[r].id != in[r].id) ASSERT_OK(cubec_buffer_release(f->d[r], out[r]));
    }
    free(vals);
    free(acc);
}

static void sweep(fixture *f, kind k)
{
    static const cubec_dtype dtypes[] = {CUBEC_DTYPE_F32, CUBEC_DTYPE_F16, CUBEC_DTYPE_I32};
    static const cubec_reduce_op ops[] = {CUBEC_REDUCE_SUM, CUBEC_REDUCE_MAX};
    const int reduces = k == ALL_REDUCE || k == REDUCE_SCATTER;
    for (uint32_t n = 2; n <= RANKS; n++) {
        /* 0, 1, n - 1, not a multiple of n (odd: f16 ends mid-word), past a peer-copy chunk. */
        const uint64_t counts[] = {0, 1, n - 1, 7, 1001, (uint64_t)CHUNK * 2 + 3};
        for (int c = 0; c < 6; c++)
            for (int t = 0; t < 3; t++)
                for (int o = 0; o < (reduces ? 2 : 1); o++)
                    run_case(f, k, n, counts[c], dtypes[t], ops[o], k == BROADCAST ? n - 1 : 0);
    }
}

static void test_all_reduce(void **state)
{
    sweep(*state, ALL_REDUCE);
}
static void test_broadcast(void **state)
{
    sweep(*state, BROADCAST);
    /* Every root, over three ranks. */
    for (uint32_t root = 0; root < RANKS; root++)
        run_case(*state, BROADCAST, RANKS, 1001, CUBEC_DTYPE_F16, CUBEC_REDUCE_SUM, root);
}
static void test_all_gather(void **state)
{
    sweep(*state, ALL_GATHER);
}
static void test_reduce_scatter(void **state)
{
    sweep(*state, REDUCE_SCATTER);
}

int main(void)
{
    char chunk[32];
    snprintf(chunk, sizeof chunk, "%d", CHUNK);
    setenv("CUBEC_MULTI_CHUNK_BYTES", chunk, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_reduce),
        cmocka_unit_test(test_broadcast),
        cmocka_unit_test(test_all_gather),
        cmocka_unit_test(test_reduce_scatter),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
