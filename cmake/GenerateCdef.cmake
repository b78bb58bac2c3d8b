# Writes cubec_cdef.h (cmake/Cdef.cmake): cubec.h preprocessed for binding generators. Run with
# cmake -P and -DCOMPILER= -DHEADER= -DSTUBS= -DOUTPUT=.
#  - The compiler's preprocessor expands the X-macro lists and drops the include guards, the
#    comments and the #define lines; __GNUC__ and __clang__ are undefined so that cubec.h leaves
#    out every __attribute__ and pragma, and <stddef.h> / <stdint.h> are the stubs of
#    cmake/cdef/, which define only the types cubec.h uses.
#  - The integer constants cubec.h #defines (CUBEC_VERSION_MAJOR, CUBEC_MAX_POOLS, ...) would be
#    lost with the #define lines: they come back as the enumerators of one enum, where cffi and
#    pycparser both read them. CUBEC_VERSION is computed as the header packs it.
# The file has no comments and no directives: pycparser reads neither.
execute_process(
  COMMAND ${COMPILER} -E -P -std=c11 -nostdinc -I${STUBS} -U__GNUC__ -U__clang__ -x c ${HEADER}
  OUTPUT_VARIABLE _decls ERROR_VARIABLE _errors RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "preprocessing ${HEADER} for cubec_cdef.h failed: ${_errors}")
endif()
file(STRINGS ${HEADER} _defines REGEX "^#define CUBEC_[A-Z0-9_]+ +[0-9]+u?( |$)")
set(_enum "")
foreach(_line IN LISTS _defines)
  string(REGEX REPLACE "^#define (CUBEC_[A-Z0-9_]+) +([0-9]+)u?.*" "\\1" _name "${_line}")
  string(REGEX REPLACE "^#define (CUBEC_[A-Z0-9_]+) +([0-9]+)u?.*" "\\2" _value "${_line}")
  string(APPEND _enum "    ${_name} = ${_value},\n")
  set(_v_${_name} ${_value})
endforeach()
math(EXPR _packed
     "(${_v_CUBEC_VERSION_MAJOR} << 16) | (${_v_CUBEC_VERSION_MINOR} << 8) | ${_v_CUBEC_VERSION_PATCH}")
string(APPEND _enum "    CUBEC_VERSION = ${_packed},\n")
file(WRITE ${OUTPUT}.tmp "${_decls}\nenum cubec_constants {\n${_enum}};\n")
# Rewritten only when it changed, so that what depends on it is not rebuilt for nothing.
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUTPUT}.tmp ${OUTPUT})
file(REMOVE ${OUTPUT}.tmp)
