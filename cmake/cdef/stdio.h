/* Stands in for <stdio.h> when cubec.h is preprocessed into cubec_cdef.h (cmake/Cdef.cmake):
 * cubec.h includes it only for the CUBEC_CHECK macro, which the file does not carry. */
