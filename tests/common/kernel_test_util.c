#include "kernel_test_util.h"

#include "kernel/glsl_compiler.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* cmocka needs the headers above first. */
#include <cmocka.h>

/* libspirv.h defines (not declares) a const kDefaultMaxIdBound at file scope, which in C has
 * external linkage: a name of this file's own keeps it from clashing with a test's copy. */
#define kDefaultMaxIdBound kernel_test_util_max_id_bound_
#include <spirv-tools/libspirv.h>
#undef kDefaultMaxIdBound

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

void expect_valid_spirv(const uint32_t *words, size_t n, const char *what)
{
    spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_2);
    assert_non_null(ctx);
    spv_diagnostic diag = NULL;
    spv_result_t res = spvValidateBinary(ctx, words, n, &diag);
    char message[1024];
    snprintf(message, sizeof message, "%s", diag && diag->error ? diag->error : "?");
    spvDiagnosticDestroy(diag);
    spvContextDestroy(ctx);
    if (res != SPV_SUCCESS) fail_msg("%s is not valid SPIR-V: %s", what, message);
}
