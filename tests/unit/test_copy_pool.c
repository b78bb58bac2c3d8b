/* The copy pool: every byte of copies of many sizes (below and above the split, not multiples of
 * a cache line, unaligned ends) lands where memcpy would put it, with 0 to 7 helpers, with no byte
 * outside the destination touched. Run under ThreadSanitizer too (the concurrency tests). */
#include "test_util.h"

#include "base/copy_pool.h"

#include <stdlib.h>
#include <string.h>

#define GUARD 64

static void check_copies(uint32_t helpers)
{
    copy_pool *p = NULL;
    ASSERT_OK(copy_pool_create(helpers, &p));
    assert_int_equal(copy_pool_helpers(p), helpers);
    static const size_t sizes[] = {0,
                                   1,
                                   63,
                                   4096,
                                   COPY_POOL_MIN_SPLIT - 1,
                                   COPY_POOL_MIN_SPLIT,
                                   COPY_POOL_MIN_SPLIT + 1,
                                   3 * COPY_POOL_MIN_SPLIT + 17,
                                   16u << 20};
    size_t max = 16u << 20;
    unsigned char *src = malloc(max + 8), *dst = malloc(max + 2 * GUARD + 8);
    assert_non_null(src);
    assert_non_null(dst);
    uint32_t x = helpers + 1;
    for (size_t i = 0; i < max + 8; i++)
        src[i] = (unsigned char)(test_rand(&x) >> 24);
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
        for (size_t shift = 0; shift < 8; shift += 3) {
            size_t n = sizes[k];
            memset(dst, 0xcd, n + 2 * GUARD + 8);
            copy_pool_memcpy(p, dst + GUARD + shift, src + (7 - shift), n);
            assert_memory_equal(dst + GUARD + shift, src + (7 - shift), n);
            for (size_t g = 0; g < GUARD + shift; g++)
                assert_int_equal(dst[g], 0xcd);
            for (size_t g = 0; g < GUARD; g++)
                assert_int_equal(dst[GUARD + shift + n + g], 0xcd);
        }
    free(src);
    free(dst);
    copy_pool_destroy(p);
}

static void test_copies_with_helpers(void **state)
{
    (void)state;
    for (uint32_t helpers = 0; helpers < 8; helpers++)
        check_copies(helpers);
    copy_pool_memcpy(NULL, NULL, NULL, 0); /* no pool: a plain memcpy */
    assert_int_equal(copy_pool_helpers(NULL), 0);
    copy_pool_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_copies_with_helpers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
