/* Stands in for <stddef.h> when cubec.h is preprocessed into cubec_cdef.h (cmake/Cdef.cmake):
 * size_t as the compiler defines it, and nothing else, so the file holds only cubec's
 * declarations. */
typedef __SIZE_TYPE__ size_t;
