#include "kernel_test_util.h"

#include "kernel/glsl_compiler.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the headers above first. */
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

void expect_contains(const char *text, const char *needle)
{
    if (!text || !strstr(text, needle)) {
        print_error("expected \"%s\" in: %s\n", needle, text ? text : "(null)");
        fail();
    }
}

void expect_ok(cubec_status status)
{
    if (status) {
        print_error("unexpected %s: %s\n", cubec_code_name(cubec_status_code(status)),
                    cubec_status_message(status));
        cubec_status_free(status);
        fail();
    }
}

int group_setup(void **state)
{
    glsl_compiler *c = NULL;
    cubec_status s = glsl_compiler_create(&c);
    if (s) {
        fprintf(stderr, "glsl_compiler_create: %s\n", cubec_status_message(s));
        cubec_status_free(s);
        return -1;
    }
    *state = c;
    return 0;
}

int group_teardown(void **state)
{
    glsl_compiler_destroy(*state);
    return 0;
}
