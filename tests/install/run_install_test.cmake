# Driven by ctest (see CMakeLists.txt): install, then consume through both package formats.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
# The declarations for binding generators sit beside the header (docs/api.md, "Bindings").
if(NOT EXISTS ${prefix}/include/cubec/cubec_cdef.h)
  message(FATAL_ERROR "cubec_cdef.h was not installed beside cubec.h")
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/consumer -B ${WORK_DIR}/consumer
    -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
run(${WORK_DIR}/consumer/consumer)
# pkg-config, shared library
set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
execute_process(COMMAND pkg-config --cflags --libs cubec OUTPUT_VARIABLE flags
                OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config cubec failed")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
run(cc -std=c11 ${SOURCE_DIR}/tests/install/consumer/consumer.c -o ${WORK_DIR}/consumer_pc ${flags}
    -Wl,-rpath,${prefix}/lib)
run(${WORK_DIR}/consumer_pc)
