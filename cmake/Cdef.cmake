# cubec_cdef.h: the declarations of cubec.h, preprocessed, for binding generators (cffi's
# FFI().cdef, pycparser); built with the library and installed beside cubec.h
# (docs/api.md, "Bindings"). cmake/GenerateCdef.cmake says how.
set(CUBEC_CDEF ${CMAKE_BINARY_DIR}/include/cubec/cubec_cdef.h)
add_custom_command(OUTPUT ${CUBEC_CDEF}
  COMMAND ${CMAKE_COMMAND} -DCOMPILER=${CMAKE_C_COMPILER}
          -DHEADER=${PROJECT_SOURCE_DIR}/include/cubec/cubec.h
          -DSTUBS=${PROJECT_SOURCE_DIR}/cmake/cdef -DOUTPUT=${CUBEC_CDEF}
          -P ${PROJECT_SOURCE_DIR}/cmake/GenerateCdef.cmake
  DEPENDS ${PROJECT_SOURCE_DIR}/include/cubec/cubec.h ${PROJECT_SOURCE_DIR}/cmake/GenerateCdef.cmake
          ${PROJECT_SOURCE_DIR}/cmake/cdef/stddef.h ${PROJECT_SOURCE_DIR}/cmake/cdef/stdint.h
          ${PROJECT_SOURCE_DIR}/cmake/cdef/stdio.h ${PROJECT_SOURCE_DIR}/cmake/cdef/stdlib.h
  COMMENT "Generating cubec_cdef.h")
add_custom_target(cubec_cdef ALL DEPENDS ${CUBEC_CDEF})
