/* The buffer operations (cubec.h "Buffers" and "Transfers") as one table: cubec_write, cubec_read,
 * cubec_copy, cubec_fill and cubec_buffer_view, each a row, swept over aligned and unaligned
 * offsets and sizes, plus rows of refused arguments (out-of-range offsets and sizes, unaligned
 * copies and fills, misaligned views, a zero-size binding, released, zero and made-up handles,
 * NULL pointers) and of zero-byte operations, which succeed and do nothing.
 *
 * The test keeps a host shadow of every byte of its two buffers, applies each operation to the
 * shadow as the documentation says it acts on the buffer, and after every case reads both
 * buffers back whole and compares them with their shadows byte for byte. Whether a case must
 * succeed is decided here from the documented rules (docs/api.md "Edge cases": offset + size must
 * fit; copies and fills take multiples of 4; views start at multiples of storage_offset_alignment;
 * a copy within one allocation may not overlap; a zero-size buffer cannot be bound; released,
 * zero and made-up handles are refused), never from what the library answers. A refused case must
 * return CUBEC_INVALID_ARGUMENT naming the call, clear its out-parameter, leave the host memory of
 * a read untouched and change no byte of either buffer. */
#include "test_util.h"
#include "uint_kernels.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_BYTES 4608u /* 255 + 4097 = 4352 fits, with room for a copy after it */
#define GUARD 32u       /* canary bytes around the host memory of a read */
#define CANARY 0xa5u

static const uint64_t sweep_offsets[] = {0, 1, 3, 4, 16, 255};
static const uint64_t sweep_sizes[] = {1, 3, 4, 5, 1000, 4097};
#define SWEEP_OFFSETS (sizeof sweep_offsets / sizeof sweep_offsets[0])
#define SWEEP_SIZES (sizeof sweep_sizes / sizeof sweep_sizes[0])

typedef enum op_kind {
    OP_WRITE,     /* cubec_write(A, offset, random bytes, size)                            */
    OP_READ,      /* cubec_read(A, offset, size) into guarded host memory                  */
    OP_COPY,      /* cubec_copy(A, offset -> B, offset2, size)                             */
    OP_COPY_SELF, /* cubec_copy(A, offset -> A, offset2, size): one allocation             */
    OP_FILL,      /* cubec_fill(A, offset, size, random pattern)                           */
    OP_VIEW,      /* cubec_buffer_view(A, offset, size), then used: size, write, read, sub-view */
    OP_BIND,      /* a launch of produce binding the target (refused when it holds 0 bytes) */
} op_kind;

/* Which handle the operation targets (the destination of a write, copy or fill, the source of a
 * read, the parent of a view, the binding of a launch). */
typedef enum target_kind {
    T_A,        /* the live BUF_BYTES buffer A                                       */
    T_EMPTY,    /* a live buffer of 0 bytes                                         */
    T_RELEASED, /* a buffer of BUF_BYTES bytes, released before the case            */
    T_ZERO,     /* the zero handle                                                  */
    T_MADE_UP,  /* an id no cubec_buffer_* call returned                           */
    T_VIEW0,    /* a view of A of 0 bytes (at offset 0), for OP_BIND               */
} target_kind;

typedef struct row {
    const char *name;
    op_kind op;
    int sweep;        /* 1: every offset x size of the sweep (offset2 derived); 0: the fields */
    uint64_t offset;  /* of the target                                             */
    uint64_t offset2; /* of the destination of a copy                              */
    uint64_t size;    /* bytes                                                     */
    target_kind target;
    int null_pointer;   /* the host pointer (write src / read dst / view out) is NULL */
    const char *needle; /* a refusal's message also contains this (NULL: only the call) */
} row;

#define SWEEP(name, op)                                                                            \
    {                                                                                              \
        name, op, 1, 0, 0, 0, T_A, 0, NULL                                                         \
    }
#define CASE(name, op, off, off2, size, target, null_pointer, needle)                              \
    {                                                                                              \
        name, op, 0, off, off2, size, target, null_pointer, needle                                 \
    }

static const row table[] = {
    /* The operations, swept. */
    SWEEP("write", OP_WRITE),
    SWEEP("read", OP_READ),
    SWEEP("copy A->B", OP_COPY),
    SWEEP("copy within A", OP_COPY_SELF),
    SWEEP("fill", OP_FILL),
    SWEEP("view", OP_VIEW),
    /* Zero bytes: allowed everywhere in range, even at the very end and on an empty buffer. */
    CASE("write 0 bytes at the end", OP_WRITE, BUF_BYTES, 0, 0, T_A, 0, NULL),
    CASE("write 0 bytes from NULL", OP_WRITE, 8, 0, 0, T_A, 1, NULL),
    CASE("read 0 bytes at the end", OP_READ, BUF_BYTES, 0, 0, T_A, 0, NULL),
    CASE("read 0 bytes into NULL", OP_READ, 8, 0, 0, T_A, 1, NULL),
    CASE("copy 0 bytes at the ends", OP_COPY, BUF_BYTES, BUF_BYTES, 0, T_A, 0, NULL),
    CASE("fill 0 bytes at the end", OP_FILL, BUF_BYTES, 0, 0, T_A, 0, NULL),
    CASE("view of 0 bytes at the end", OP_VIEW, BUF_BYTES, 0, 0, T_A, 0, NULL),
    CASE("write 0 bytes to an empty buffer", OP_WRITE, 0, 0, 0, T_EMPTY, 0, NULL),
    CASE("read 0 bytes of an empty buffer", OP_READ, 0, 0, 0, T_EMPTY, 0, NULL),
    CASE("fill 0 bytes of an empty buffer", OP_FILL, 0, 0, 0, T_EMPTY, 0, NULL),
    CASE("view of an empty buffer", OP_VIEW, 0, 0, 0, T_EMPTY, 0, NULL),
    /* Out of range: offset past the end, size past the end, sums that overflow 64 bits. */
    CASE("write past the end", OP_WRITE, BUF_BYTES, 0, 1, T_A, 0, "past the end"),
    CASE("write offset beyond the end", OP_WRITE, BUF_BYTES + 1, 0, 0, T_A, 0, "past the end"),
    CASE("write size overflowing", OP_WRITE, 5, 0, UINT64_MAX - 2, T_A, 0, "past the end"),
    CASE("read past the end", OP_READ, BUF_BYTES - 3, 0, 4, T_A, 0, "past the end"),
    CASE("read offset overflowing", OP_READ, UINT64_MAX - 1, 0, 4, T_A, 0, "past the end"),
    CASE("copy source past the end", OP_COPY, BUF_BYTES - 4, 0, 8, T_A, 0, "past the end"),
    CASE("copy destination past the end", OP_COPY, 0, BUF_BYTES - 4, 8, T_A, 0, "past the end"),
    CASE("copy size overflowing", OP_COPY, 4, 4, UINT64_MAX - 3, T_A, 0, "past the end"),
    CASE("fill past the end", OP_FILL, BUF_BYTES - 4, 0, 8, T_A, 0, "past the end"),
    CASE("fill size overflowing", OP_FILL, 8, 0, UINT64_MAX - 7, T_A, 0, "past the end"),
    CASE("view past the end", OP_VIEW, BUF_BYTES - 16, 0, 32, T_A, 0, "past the end"),
    CASE("view offset beyond the end", OP_VIEW, BUF_BYTES + 16, 0, 0, T_A, 0, "past the end"),
    CASE("write 1 byte to an empty buffer", OP_WRITE, 0, 0, 1, T_EMPTY, 0, "past the end"),
    CASE("read 1 byte of an empty buffer", OP_READ, 0, 0, 1, T_EMPTY, 0, "past the end"),
    /* Copies within one allocation may not overlap. */
    CASE("copy overlapping itself", OP_COPY_SELF, 0, 4, 8, T_A, 0, "overlap"),
    CASE("copy onto itself", OP_COPY_SELF, 64, 64, 64, T_A, 0, "overlap"),
    /* Zero size where it is refused: binding a buffer or view of 0 bytes to a kernel. */
    CASE("bind an empty buffer", OP_BIND, 0, 0, 0, T_EMPTY, 0, "size 0"),
    CASE("bind an empty view", OP_BIND, 0, 0, 0, T_VIEW0, 0, "size 0"),
    CASE("bind A", OP_BIND, 0, 0, BUF_BYTES, T_A, 0, NULL),
    /* Handles: released, zero, made up. */
    CASE("write to a released buffer", OP_WRITE, 0, 0, 4, T_RELEASED, 0, "released"),
    CASE("read a released buffer", OP_READ, 0, 0, 4, T_RELEASED, 0, "released"),
    CASE("copy into a released buffer", OP_COPY, 0, 0, 4, T_RELEASED, 0, "released"),
    CASE("fill a released buffer", OP_FILL, 0, 0, 4, T_RELEASED, 0, "released"),
    CASE("view of a released buffer", OP_VIEW, 0, 0, 16, T_RELEASED, 0, "released"),
    CASE("bind a released buffer", OP_BIND, 0, 0, 0, T_RELEASED, 0, "released"),
    CASE("write to the zero handle", OP_WRITE, 0, 0, 4, T_ZERO, 0, "zero"),
    CASE("read the zero handle", OP_READ, 0, 0, 4, T_ZERO, 0, "zero"),
    CASE("copy into the zero handle", OP_COPY, 0, 0, 4, T_ZERO, 0, "zero"),
    CASE("fill the zero handle", OP_FILL, 0, 0, 4, T_ZERO, 0, "zero"),
    CASE("view of the zero handle", OP_VIEW, 0, 0, 16, T_ZERO, 0, "zero"),
    CASE("write to a made-up handle", OP_WRITE, 0, 0, 4, T_MADE_UP, 0, NULL),
    CASE("read a made-up handle", OP_READ, 0, 0, 4, T_MADE_UP, 0, NULL),
    CASE("copy into a made-up handle", OP_COPY, 0, 0, 4, T_MADE_UP, 0, NULL),
    CASE("fill a made-up handle", OP_FILL, 0, 0, 4, T_MADE_UP, 0, NULL),
    CASE("view of a made-up handle", OP_VIEW, 0, 0, 16, T_MADE_UP, 0, NULL),
    /* NULL host pointers with bytes to move. */
    CASE("write from NULL", OP_WRITE, 0, 0, 4, T_A, 1, "NULL"),
    CASE("read into NULL", OP_READ, 0, 0, 4, T_A, 1, "NULL"),
    CASE("view into a NULL out_view", OP_VIEW, 0, 0, 16, T_A, 1, "NULL"),
};
#define ROWS (sizeof table / sizeof table[0])

/* One case of a row: a row with its sweep values filled in. */
typedef struct op_case {
    const row *r;
    uint64_t offset, offset2, size;
} op_case;

typedef struct world {
    cubec_device *d;
    cubec_stream s;
    uint64_t align; /* storage_offset_alignment */
    cubec_buffer a, b, empty, released, view0;
    cubec_kernel produce;
    uint8_t shadow_a[BUF_BYTES], shadow_b[BUF_BYTES];
    uint32_t rng;
    unsigned ran, refused;
    int runs_kernels; /* 0 on the null backend: a launch's outputs keep their bytes */
} world;

static int is_copy(op_kind op)
{
    return op == OP_COPY || op == OP_COPY_SELF;
}

static uint64_t target_bytes(target_kind t)
{
    return t == T_A || t == T_RELEASED ? BUF_BYTES : 0;
}

/* offset + size lies within `bytes` (with no overflow). */
static int fits(uint64_t offset, uint64_t size, uint64_t bytes)
{
    return offset <= bytes && size <= bytes - offset;
}

/* The documented verdict on a case: 1 when it must succeed. */
static int must_succeed(const world *w, const op_case *c)
{
    const row *r = c->r;
    if (r->target == T_RELEASED || r->target == T_ZERO || r->target == T_MADE_UP) return 0;
    if (r->op == OP_BIND) return r->target == T_A; /* empty buffers and views cannot be bound */
    if (r->null_pointer && (c->size || r->op == OP_VIEW)) return 0;
    uint64_t bytes = target_bytes(r->target);
    if (!fits(c->offset, c->size, bytes)) return 0;
    if (is_copy(r->op) && !fits(c->offset2, c->size, BUF_BYTES)) return 0;
    if ((is_copy(r->op) || r->op == OP_FILL) &&
        (c->offset % 4 || c->size % 4 || (is_copy(r->op) && c->offset2 % 4)))
        return 0;
    if (r->op == OP_COPY_SELF && c->size && c->offset < c->offset2 + c->size &&
        c->offset2 < c->offset + c->size)
        return 0;
    if (r->op == OP_VIEW && c->offset % w->align) return 0;
    return 1;
}

static const char *call_name(op_kind op)
{
    switch (op) {
    case OP_WRITE: return "cubec_write";
    case OP_READ: return "cubec_read";
    case OP_COPY:
    case OP_COPY_SELF: return "cubec_copy";
    case OP_FILL: return "cubec_fill";
    case OP_VIEW: return "cubec_buffer_view";
    case OP_BIND: return "cubec_launch";
    }
    return "?";
}

static void describe(const op_case *c, char *out, size_t size)
{
    snprintf(out, size, "row \"%s\" (offset %" PRIu64 ", offset2 %" PRIu64 ", size %" PRIu64 ")",
             c->r->name, c->offset, c->offset2, c->size);
}

static void random_bytes(world *w, uint8_t *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        p[i] = (uint8_t)test_rand(&w->rng);
}

static cubec_buffer target_handle(const world *w, target_kind t)
{
    switch (t) {
    case T_A: return w->a;
    case T_EMPTY: return w->empty;
    case T_RELEASED: return w->released;
    case T_ZERO: return (cubec_buffer){0};
    case T_VIEW0: return w->view0;
    case T_MADE_UP:
        /* A's device and generation bits with an index no buffer of this test reaches. */
        return (cubec_buffer){(w->a.id & ~0xffffffffull) | 0x7fff0000u};
    }
    return (cubec_buffer){0};
}

/* Reads `bytes` bytes of `b` and compares them with `shadow`, naming the first difference. */
static void expect_buffer(world *w, cubec_buffer b, const uint8_t *shadow, uint64_t bytes,
                          const char *which, const op_case *c)
{
    uint8_t got[BUF_BYTES];
    char what[256];
    describe(c, what, sizeof what);
    cubec_status st = cubec_read(w->d, w->s, b, 0, got, bytes);
    if (st) fail_msg("%s: reading %s back failed: %s", what, which, cubec_status_message(st));
    for (uint64_t i = 0; i < bytes; i++)
        if (got[i] != shadow[i])
            fail_msg("%s: byte %" PRIu64 " of %s is 0x%02x, the model says 0x%02x", what, i, which,
                     got[i], shadow[i]);
}

/* The refusal a case must give: CUBEC_INVALID_ARGUMENT, a message naming the call and, where the
 * row says so, its reason. Frees `st`. */
static void expect_refused(world *w, cubec_status st, const op_case *c)
{
    char what[256];
    describe(c, what, sizeof what);
    if (!st) fail_msg("%s succeeded; the documented rules refuse it", what);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", cubec_status_message(st));
    cubec_code code = cubec_status_code(st);
    cubec_status_free(st);
    if (code != CUBEC_INVALID_ARGUMENT)
        fail_msg("%s gave %s (%s); expected CUBEC_INVALID_ARGUMENT", what, cubec_code_name(code),
                 msg);
    if (!strstr(msg, call_name(c->r->op)))
        fail_msg("%s: the message \"%s\" does not name %s", what, msg, call_name(c->r->op));
    if (c->r->needle && !strstr(msg, c->r->needle))
        fail_msg("%s: the message \"%s\" lacks \"%s\"", what, msg, c->r->needle);
    w->refused++;
}

static void expect_ok(cubec_status st, const op_case *c, const char *step)
{
    if (!st) return;
    char what[256];
    describe(c, what, sizeof what);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", cubec_status_message(st));
    cubec_status_free(st);
    fail_msg("%s: %s failed: %s", what, step, msg);
}

/* The shadow of `t` (NULL for buffers whose bytes the test does not track). */
static uint8_t *shadow_of(world *w, target_kind t)
{
    return t == T_A ? w->shadow_a : NULL;
}

static void run_write(world *w, const op_case *c, int ok)
{
    uint8_t *src = malloc(c->size > BUF_BYTES ? 16 : c->size + 1);
    assert_non_null(src);
    uint64_t n = c->size > BUF_BYTES ? 0 : c->size;
    random_bytes(w, src, n);
    cubec_status st = cubec_write(w->d, w->s, target_handle(w, c->r->target), c->offset,
                                  c->r->null_pointer ? NULL : src, c->size);
    if (!ok) {
        free(src);
        expect_refused(w, st, c);
        return;
    }
    expect_ok(st, c, "cubec_write");
    uint8_t *shadow = shadow_of(w, c->r->target);
    if (shadow && c->size) memcpy(shadow + c->offset, src, c->size);
    free(src);
}

static void run_read(world *w, const op_case *c, int ok)
{
    uint64_t n = c->size > BUF_BYTES ? 0 : c->size;
    uint8_t *host = malloc(n + 2 * GUARD);
    assert_non_null(host);
    memset(host, CANARY, n + 2 * GUARD);
    cubec_status st = cubec_read(w->d, w->s, target_handle(w, c->r->target), c->offset,
                                 c->r->null_pointer ? NULL : host + GUARD, c->size);
    char what[256];
    describe(c, what, sizeof what);
    if (!ok) {
        expect_refused(w, st, c);
    } else {
        expect_ok(st, c, "cubec_read");
        const uint8_t *shadow = shadow_of(w, c->r->target);
        for (uint64_t i = 0; shadow && i < n; i++)
            if (host[GUARD + i] != shadow[c->offset + i]) {
                uint8_t g = host[GUARD + i];
                free(host);
                fail_msg("%s: byte %" PRIu64 " read is 0x%02x, the model says 0x%02x", what,
                         c->offset + i, g, shadow[c->offset + i]);
            }
    }
    /* The guards always, and everything when refused: a read writes only what it read. */
    for (uint64_t i = 0; i < n + 2 * GUARD; i++) {
        int inside = i >= GUARD && i < GUARD + n;
        if ((!ok || !inside) && host[i] != CANARY) {
            free(host);
            fail_msg("%s: host byte %" PRIu64 " outside what was read was overwritten", what, i);
        }
    }
    free(host);
}

static void run_copy(world *w, const op_case *c, int ok)
{
    int self = c->r->op == OP_COPY_SELF;
    cubec_buffer src = w->a;
    cubec_buffer dst = self ? w->a : c->r->target == T_A ? w->b : target_handle(w, c->r->target);
    cubec_status st = cubec_copy(w->d, w->s, src, c->offset, dst, c->offset2, c->size);
    if (!ok) {
        expect_refused(w, st, c);
        return;
    }
    expect_ok(st, c, "cubec_copy");
    uint8_t *to = self ? w->shadow_a : w->shadow_b;
    if (c->size) memmove(to + c->offset2, w->shadow_a + c->offset, c->size);
}

static void run_fill(world *w, const op_case *c, int ok)
{
    uint32_t pattern = test_rand(&w->rng);
    cubec_status st =
        cubec_fill(w->d, w->s, target_handle(w, c->r->target), c->offset, c->size, pattern);
    if (!ok) {
        expect_refused(w, st, c);
        return;
    }
    expect_ok(st, c, "cubec_fill");
    uint8_t *shadow = shadow_of(w, c->r->target);
    uint8_t word[4];
    memcpy(word, &pattern, 4); /* the pattern's bytes as the device stores it (little endian) */
    for (uint64_t i = 0; shadow && i < c->size; i++)
        shadow[c->offset + i] = word[i % 4];
}

/* A view that was created is used: its size, a write through it at an unaligned inner offset,
 * a read of it whole, and a view of it (offsets add up) written through too. */
static void use_view(world *w, const op_case *c, cubec_buffer v)
{
    uint64_t size = 1;
    expect_ok(cubec_buffer_get_size(w->d, v, &size), c, "cubec_buffer_get_size of the view");
    if (size != c->size) {
        char what[256];
        describe(c, what, sizeof what);
        fail_msg("%s: the view holds %" PRIu64 " bytes", what, size);
    }
    uint8_t *shadow = shadow_of(w, c->r->target);
    if (!shadow || !c->size) return;
    uint8_t bytes[BUF_BYTES];
    uint64_t at = c->size / 3, n = c->size - at > 1 ? (c->size - at) / 2 : c->size - at;
    random_bytes(w, bytes, n);
    expect_ok(cubec_write(w->d, w->s, v, at, bytes, n), c, "a write through the view");
    memcpy(shadow + c->offset + at, bytes, n);
    expect_buffer(w, v, shadow + c->offset, c->size, "the view", c);
    if (c->size > w->align) {
        cubec_buffer sub = {0};
        expect_ok(cubec_buffer_view(w->d, v, w->align, c->size - w->align, &sub), c,
                  "a view of the view");
        uint64_t m = c->size - w->align < 7 ? c->size - w->align : 7;
        random_bytes(w, bytes, m);
        expect_ok(cubec_write(w->d, w->s, sub, 0, bytes, m), c, "a write through the sub-view");
        memcpy(shadow + c->offset + w->align, bytes, m);
        expect_ok(cubec_buffer_release(w->d, sub), c, "releasing the sub-view");
    }
}

static void run_view(world *w, const op_case *c, int ok)
{
    cubec_buffer v = {0x1234}; /* cleared on entry, written only on success */
    cubec_status st = cubec_buffer_view(w->d, target_handle(w, c->r->target), c->offset, c->size,
                                        c->r->null_pointer ? NULL : &v);
    if (!ok) {
        expect_refused(w, st, c);
        if (!c->r->null_pointer && v.id != 0) {
            char what[256];
            describe(c, what, sizeof what);
            fail_msg("%s: the refused view's out-parameter was left at 0x%" PRIx64, what, v.id);
        }
        return;
    }
    expect_ok(st, c, "cubec_buffer_view");
    assert_true(v.id != 0);
    use_view(w, c, v);
    expect_ok(cubec_buffer_release(w->d, v), c, "releasing the view");
}

static void run_bind(world *w, const op_case *c, int ok)
{
    /* produce writes o[i] = i * mul + add for i < n. */
    uint32_t n = ok ? BUF_BYTES / 4 : 1, mul = test_rand(&w->rng), add = test_rand(&w->rng);
    cubec_status st =
        uint_launch(w->d, w->s, w->produce, target_handle(w, c->r->target), NONE, n, mul, add);
    if (!ok) {
        expect_refused(w, st, c);
        return;
    }
    expect_ok(st, c, "cubec_launch");
    /* The null backend runs no kernel: A keeps its bytes (the model stays as it is). */
    if (!w->runs_kernels) return;
    uint32_t words[BUF_BYTES / 4];
    cpu_produce(words, n, mul, add);
    memcpy(w->shadow_a, words, sizeof words);
}

static void run_case(world *w, const op_case *c)
{
    int ok = must_succeed(w, c);
    switch (c->r->op) {
    case OP_WRITE: run_write(w, c, ok); break;
    case OP_READ: run_read(w, c, ok); break;
    case OP_COPY:
    case OP_COPY_SELF: run_copy(w, c, ok); break;
    case OP_FILL: run_fill(w, c, ok); break;
    case OP_VIEW: run_view(w, c, ok); break;
    case OP_BIND: run_bind(w, c, ok); break;
    }
    w->ran++;
    /* Whatever happened, both buffers hold exactly what the model says. */
    expect_buffer(w, w->a, w->shadow_a, BUF_BYTES, "A", c);
    expect_buffer(w, w->b, w->shadow_b, BUF_BYTES, "B", c);
}

static void test_buffer_ops_table(void **state)
{
    (void)state;
    static world w;
    memset(&w, 0, sizeof w);
    w.rng = 20261130u;
    w.d = test_device_open();
    cubec_device_info info = CUBEC_DEVICE_INFO_INIT;
    ASSERT_OK(cubec_device_get_info(w.d, &info));
    w.runs_kernels = strcmp(info.name, "cubec null device") != 0;
    w.align = info.storage_offset_alignment;
    assert_true(w.align >= 1 && w.align <= 256);
    ASSERT_OK(cubec_stream_new(w.d, &w.s));
    random_bytes(&w, w.shadow_a, BUF_BYTES);
    random_bytes(&w, w.shadow_b, BUF_BYTES);
    ASSERT_OK(cubec_buffer_from(w.d, w.s, w.shadow_a, BUF_BYTES, &w.a));
    ASSERT_OK(cubec_buffer_from(w.d, w.s, w.shadow_b, BUF_BYTES, &w.b));
    ASSERT_OK(cubec_buffer_create(w.d, w.s, 0, &w.empty));
    ASSERT_OK(cubec_buffer_view(w.d, w.a, 0, 0, &w.view0));
    ASSERT_OK(cubec_buffer_create(w.d, w.s, BUF_BYTES, &w.released));
    ASSERT_OK(cubec_buffer_release(w.d, w.released));
    cubec_kernel_desc kd = {
        .struct_size = sizeof(cubec_kernel_desc), .name = "produce", .glsl = produce_src};
    ASSERT_OK(cubec_kernel_create(w.d, &kd, &w.produce));

    for (size_t i = 0; i < ROWS; i++) {
        const row *r = &table[i];
        if (!r->sweep) {
            op_case c = {r, r->offset, r->offset2, r->size};
            run_case(&w, &c);
            continue;
        }
        for (size_t o = 0; o < SWEEP_OFFSETS; o++)
            for (size_t s = 0; s < SWEEP_SIZES; s++) {
                /* The destination of a copy: every offset of the sweep into B, or just past
                 * the source within A (adjacent, not overlapping). */
                size_t destinations = r->op == OP_COPY ? SWEEP_OFFSETS : 1;
                for (size_t o2 = 0; o2 < destinations; o2++) {
                    op_case c = {r, sweep_offsets[o], sweep_offsets[o2], sweep_sizes[s]};
                    if (r->op == OP_COPY_SELF) c.offset2 = c.offset + c.size;
                    run_case(&w, &c);
                }
            }
    }
    printf("    %u cases, %u refused as the rules say\n", w.ran, w.refused);
    /* Every row was exercised both ways where it can be: the sweeps held cases of each kind. */
    assert_true(w.refused > 0 && w.refused < w.ran);

    ASSERT_OK(cubec_kernel_destroy(w.d, w.produce));
    ASSERT_OK(cubec_buffer_release(w.d, w.view0));
    ASSERT_OK(cubec_buffer_release(w.d, w.empty));
    ASSERT_OK(cubec_buffer_release(w.d, w.b));
    ASSERT_OK(cubec_buffer_release(w.d, w.a));
    test_device_close(w.d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buffer_ops_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
