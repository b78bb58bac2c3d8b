/* Unit tests of the kernel statistics: totals, min/max and means against a model the test keeps,
 * the table's order and numbers, growth past the first table, truncation of long names and of
 * the output, and reset. */
#include "test_util.h"

#include "profiling/kernel_stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { KERNELS = 300, SAMPLES = 20000 };

typedef struct model {
    char name[32];
    uint64_t count, total, min, max;
} model;

static int model_by_total_desc(const void *a, const void *b)
{
    const model *x = a, *y = b;
    if (x->total != y->total) return x->total > y->total ? -1 : 1;
    return strcmp(x->name, y->name);
}

static char *format_all(const kernel_stats *s)
{
    size_t n = kernel_stats_format(s, NULL, 0);
    char *buf = malloc(n + 1);
    assert_non_null(buf);
    assert_int_equal(kernel_stats_format(s, buf, n + 1), n);
    assert_int_equal(strlen(buf), n);
    return buf;
}

static void test_empty(void **state)
{
    (void)state;
    kernel_stats *s = kernel_stats_new();
    assert_non_null(s);
    assert_true(kernel_stats_empty(s));
    char buf[8] = "x";
    assert_int_equal(kernel_stats_format(s, buf, sizeof buf), 0);
    assert_string_equal(buf, "");
    assert_false(kernel_stats_get(s, "add", NULL));
    kernel_stats_free(s);
    kernel_stats_free(NULL);
}

static void test_against_model(void **state)
{
    (void)state;
    static model m[KERNELS];
    for (int i = 0; i < KERNELS; i++) {
        snprintf(m[i].name, sizeof m[i].name, "kernel_%03d", i);
        m[i].min = UINT64_MAX;
    }
    kernel_stats *s = kernel_stats_new();
    assert_non_null(s);
    uint32_t rng = 12345;
    for (int j = 0; j < SAMPLES; j++) {
        /* Skewed so that totals differ widely and a few kernels dominate. */
        int k = (int)(test_rand(&rng) % KERNELS);
        k = k * k / KERNELS;
        uint64_t ns = 1000 + test_rand(&rng) % 5000000;
        kernel_stats_add(s, m[k].name, ns);
        m[k].count++;
        m[k].total += ns;
        if (ns < m[k].min) m[k].min = ns;
        if (ns > m[k].max) m[k].max = ns;
    }
    assert_false(kernel_stats_empty(s));
    uint64_t count = 0, total = 0;
    int present = 0;
    for (int i = 0; i < KERNELS; i++) {
        kernel_stat k;
        if (!m[i].count) {
            assert_false(kernel_stats_get(s, m[i].name, &k));
            continue;
        }
        present++;
        assert_true(kernel_stats_get(s, m[i].name, &k));
        assert_int_equal(k.count, m[i].count);
        assert_int_equal(k.total_ns, m[i].total);
        assert_int_equal(k.min_ns, m[i].min);
        assert_int_equal(k.max_ns, m[i].max);
        count += m[i].count;
        total += m[i].total;
    }
    assert_true(present > 16); /* the table grew */

    qsort(m, KERNELS, sizeof *m, model_by_total_desc);
    char *text = format_all(s);
    char *line = strtok(text, "\n");
    assert_non_null(line);
    assert_non_null(strstr(line, "kernel"));
    assert_non_null(strstr(line, "total ms"));
    assert_non_null(strstr(line, "mean us"));
    assert_non_null(strstr(line, "share %"));
    for (int i = 0; i < present; i++) {
        line = strtok(NULL, "\n");
        assert_non_null(line);
        char name[64];
        unsigned long long c;
        double ms, us, share;
        assert_int_equal(sscanf(line, "%63s %llu %lf %lf %lf", name, &c, &ms, &us, &share), 5);
        assert_string_equal(name, m[i].name); /* sorted by total, descending */
        assert_int_equal(c, m[i].count);
        assert_true(fabs(ms - (double)m[i].total / 1e6) <= 0.0005);
        assert_true(fabs(us - (double)m[i].total / (double)m[i].count / 1e3) <= 0.0005);
        assert_true(fabs(share - 100.0 * (double)m[i].total / (double)total) <= 0.05);
    }
    line = strtok(NULL, "\n");
    assert_non_null(line);
    char name[64];
    unsigned long long c;
    double ms, us, share;
    assert_int_equal(sscanf(line, "%63s %llu %lf %lf %lf", name, &c, &ms, &us, &share), 5);
    assert_string_equal(name, "total");
    assert_int_equal(c, count);
    assert_true(fabs(ms - (double)total / 1e6) <= 0.0005);
    assert_true(fabs(us - (double)total / (double)count / 1e3) <= 0.0005);
    assert_true(fabs(share - 100.0) <= 0.05);
    assert_null(strtok(NULL, "\n"));
    free(text);
    kernel_stats_free(s);
}

static void test_ties_and_names(void **state)
{
    (void)state;
    kernel_stats *s = kernel_stats_new();
    assert_non_null(s);
    char long_a[100], long_b[100];
    memset(long_a, 'a', 99);
    long_a[99] = 0;
    memcpy(long_b, long_a, sizeof long_b);
    long_b[80] = 'b'; /* differs only past the 63 characters kept */
    kernel_stats_add(s, long_a, 10);
    kernel_stats_add(s, long_b, 30);
    kernel_stats_add(s, NULL, 5);
    kernel_stats_add(s, "", 7);
    kernel_stats_add(s, "b", 40);
    kernel_stats_add(s, "a", 40);
    kernel_stat k;
    assert_true(kernel_stats_get(s, long_a, &k));
    assert_int_equal(k.count, 2);
    assert_int_equal(k.total_ns, 40);
    assert_int_equal(k.min_ns, 10);
    assert_int_equal(k.max_ns, 30);
    assert_true(kernel_stats_get(s, "?", &k));
    assert_int_equal(k.count, 2);
    assert_int_equal(k.total_ns, 12);

    char *text = format_all(s);
    /* Equal totals are ordered by name: "a", then "aaa...", then "b"; "?" has less. */
    const char *a = strstr(text, "\na "), *cut = strstr(text, "\naaaa"), *b = strstr(text, "\nb ");
    const char *q = strstr(text, "\n? ");
    assert_non_null(a);
    assert_non_null(cut);
    assert_non_null(b);
    assert_non_null(q);
    assert_true(a < cut && cut < b && b < q);
    char kept[KERNEL_STATS_NAME_MAX + 2];
    memset(kept, 'a', KERNEL_STATS_NAME_MAX);
    kept[KERNEL_STATS_NAME_MAX] = ' ';
    kept[KERNEL_STATS_NAME_MAX + 1] = 0;
    assert_non_null(strstr(text, kept)); /* cut to 63 characters */

    /* A short buffer: what fits, terminated, and the full length as snprintf returns it. */
    size_t full = strlen(text);
    char small[20];
    assert_int_equal(kernel_stats_format(s, small, sizeof small), full);
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_memory_equal(small, text, sizeof small - 1);
    free(text);

    kernel_stats_reset(s);
    assert_true(kernel_stats_empty(s));
    assert_false(kernel_stats_get(s, "a", NULL));
    kernel_stats_add(s, "a", 3);
    assert_true(kernel_stats_get(s, "a", &k));
    assert_int_equal(k.count, 1);
    assert_int_equal(k.total_ns, 3);
    kernel_stats_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_against_model),
        cmocka_unit_test(test_ties_and_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
