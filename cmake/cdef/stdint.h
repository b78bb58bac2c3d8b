/* Stands in for <stdint.h> when cubec.h is preprocessed into cubec_cdef.h (cmake/Cdef.cmake): the
 * fixed-width types as the compiler defines them, so that pycparser, which knows none, parses the
 * file (cffi accepts the same definitions of its built-in types). */
typedef __INT8_TYPE__ int8_t;
typedef __INT16_TYPE__ int16_t;
typedef __INT32_TYPE__ int32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __UINT64_TYPE__ uint64_t;
typedef __UINTPTR_TYPE__ uintptr_t;
