# Driven by ctest (see CMakeLists.txt): installs into a scratch prefix (not on the loader's path),
# then checks what a user of that prefix gets, with no LD_LIBRARY_PATH:
#  - the installed CLI runs (`cubec info`);
#  - a program built with find_package(cubec) runs;
#  - a program built with `pkg-config --cflags --libs cubec` needs libcubec.so, finds it through
#    the rpath the .pc carries, and runs;
#  - a program built with `pkg-config --static --cflags --libs cubec` needs no libcubec.so
#    (readelf's NEEDED entries, ldd's resolution) and runs.
# The work folder is removed at the end.
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
  set(run_output "${out}" PARENT_SCOPE)
endfunction()
# Fails unless the program's dynamic section and ldd agree with `expect_shared` (TRUE: it needs
# libcubec.so.N and ldd resolves it inside the prefix; FALSE: no libcubec.so at all).
function(check_libcubec program expect_shared)
  run(readelf -d ${program})
  set(needed "${run_output}")
  run(ldd ${program})
  set(resolved "${run_output}")
  if(expect_shared)
    if(NOT needed MATCHES "NEEDED[^\n]*libcubec\\.so")
      message(FATAL_ERROR "${program} does not need libcubec.so:\n${needed}")
    endif()
    string(REGEX MATCH "libcubec\\.so[^\n]*" line "${resolved}")
    if(NOT line MATCHES "=> ${prefix}/lib")
      message(FATAL_ERROR "${program}: libcubec.so is not resolved inside ${prefix}: '${line}'")
    endif()
  elseif(needed MATCHES "libcubec" OR resolved MATCHES "libcubec")
    message(FATAL_ERROR "${program} was linked statically but needs libcubec.so:\n${needed}\n${resolved}")
  endif()
endfunction()

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
# The declarations for binding generators sit beside the header (docs/api.md, "Bindings").
if(NOT EXISTS ${prefix}/include/cubec/cubec_cdef.h)
  message(FATAL_ERROR "cubec_cdef.h was not installed beside cubec.h")
endif()
unset(ENV{LD_LIBRARY_PATH})

# The installed CLI.
run(${prefix}/bin/cubec info)

# CMake package: CMake's build tree rpath points at the prefix's library.
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install/consumer -B ${WORK_DIR}/consumer
    -DCMAKE_PREFIX_PATH=${prefix})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
check_libcubec(${WORK_DIR}/consumer/consumer TRUE)
run(${WORK_DIR}/consumer/consumer)

# pkg-config, shared and static. No -Wl,-rpath of our own: the .pc must carry what is needed.
set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
foreach(mode shared static)
  set(pc_args --cflags --libs cubec)
  set(expect_shared TRUE)
  if(mode STREQUAL "static")
    set(pc_args --static ${pc_args})
    set(expect_shared FALSE)
  endif()
  execute_process(COMMAND pkg-config ${pc_args} OUTPUT_VARIABLE flags
                  OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config ${pc_args} failed: ${err}")
  endif()
  message(STATUS "pkg-config ${pc_args}: ${flags}")
  separate_arguments(flags UNIX_COMMAND "${flags}")
  set(program ${WORK_DIR}/consumer_pc_${mode})
  run(cc -std=c11 -Wall -Werror ${SOURCE_DIR}/tests/install/consumer/consumer.c -o ${program}
      ${flags})
  check_libcubec(${program} ${expect_shared})
  run(${program})
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})
