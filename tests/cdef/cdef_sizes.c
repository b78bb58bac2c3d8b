/* Prints what the compiler makes of cubec.h's types ("name size" per line, then the packed
 * version), for check_cdef.py to compare with what cffi makes of cubec_cdef.h: the generated
 * declarations must lay every struct out as the real header does. */
#include "cubec/cubec.h"

#include <stdio.h>

#define CDEF_TYPES(X)                                                                              \
    X(cubec_code)                                                                                  \
    X(cubec_fault_kind)                                                                            \
    X(cubec_device_desc)                                                                           \
    X(cubec_device_info)                                                                           \
    X(cubec_matrix_shape)                                                                          \
    X(cubec_buffer)                                                                                \
    X(cubec_define)                                                                                \
    X(cubec_spec_constant)                                                                         \
    X(cubec_kernel_desc)                                                                           \
    X(cubec_kernel_info)                                                                           \
    X(cubec_info_field)                                                                            \
    X(cubec_launch_desc)                                                                           \
    X(cubec_graph)                                                                                 \
    X(cubec_profile)                                                                               \
    X(cubec_profile_result)                                                                        \
    X(cubec_tuner_desc)                                                                            \
    X(cubec_tune_candidate)                                                                        \
    X(cubec_tune_request)                                                                          \
    X(cubec_tune_result)                                                                           \
    X(cubec_tune_outcome)                                                                          \
    X(cubec_pool_report)                                                                           \
    X(cubec_memory_report)                                                                         \
    X(cubec_raw_buffer)                                                                            \
    X(cubec_guard)                                                                                 \
    X(cubec_vulkan_handles)                                                                        \
    X(cubec_stream)

int main(void)
{
#define PRINT_SIZE(type) printf("%s %zu\n", #type, sizeof(type));
    CDEF_TYPES(PRINT_SIZE)
#undef PRINT_SIZE
    printf("CUBEC_VERSION %u\n", (unsigned)CUBEC_VERSION);
    return 0;
}
