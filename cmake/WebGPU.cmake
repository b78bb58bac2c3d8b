# The WebGPU implementation for the webgpu backend (src/gpu/webgpu/, docs/device.md): wgpu-native
# from the PyPI `wgpu` wheel, fetched into the build tree at configure time, best-effort.
#
# The backend is always compiled, against the webgpu.h cubec carries (third_party/webgpu/, the
# same wheel's header), and dlopens the library at run time; so neither a missing network nor a
# missing pip fails the build: the webgpu tests are then not registered, and this says why.
#
#   CUBEC_WEBGPU_FETCH (ON)        fetch the wheel when the build tree has no library yet
#   CUBEC_WEBGPU_WHEEL_VERSION     the `wgpu` wheel (0.32.0: wgpu-native 29, the header carried)
#
# Sets CUBEC_WEBGPU_LIBRARY_FILE (the build tree's copy, compiled into the backend as its second
# choice after $CUBEC_WEBGPU_LIBRARY) and CUBEC_WEBGPU_AVAILABLE (that file exists).
option(CUBEC_WEBGPU_FETCH "Fetch wgpu-native (PyPI wgpu wheel) into the build tree" ON)
set(CUBEC_WEBGPU_WHEEL_VERSION "0.32.0" CACHE STRING "The PyPI wgpu wheel wgpu-native comes from")
set(CUBEC_WEBGPU_DIR ${CMAKE_BINARY_DIR}/webgpu)
set(CUBEC_WEBGPU_LIBRARY_FILE ${CUBEC_WEBGPU_DIR}/libwgpu_native.so)
set(_wg_why "")

if(NOT EXISTS ${CUBEC_WEBGPU_LIBRARY_FILE})
  if(NOT CUBEC_WEBGPU_FETCH)
    set(_wg_why "CUBEC_WEBGPU_FETCH is OFF")
  elseif(NOT CMAKE_SYSTEM_NAME STREQUAL "Linux" OR NOT CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
    set(_wg_why "the wheel fetched is manylinux x86_64 only (${CMAKE_SYSTEM_NAME} ${CMAKE_SYSTEM_PROCESSOR})")
  else()
    find_package(Python3 COMPONENTS Interpreter QUIET)
    if(NOT Python3_Interpreter_FOUND)
      set(_wg_why "no Python interpreter for pip")
    else()
      file(MAKE_DIRECTORY ${CUBEC_WEBGPU_DIR}/wheel)
      execute_process(
        COMMAND ${Python3_EXECUTABLE} -m pip download -q --no-deps --disable-pip-version-check
                -d ${CUBEC_WEBGPU_DIR}/wheel wgpu==${CUBEC_WEBGPU_WHEEL_VERSION}
        RESULT_VARIABLE _wg_rc OUTPUT_VARIABLE _wg_out ERROR_VARIABLE _wg_out TIMEOUT 180)
      file(GLOB _wg_wheel ${CUBEC_WEBGPU_DIR}/wheel/wgpu-${CUBEC_WEBGPU_WHEEL_VERSION}-*.whl)
      if(NOT _wg_rc EQUAL 0 OR NOT _wg_wheel)
        string(REGEX REPLACE "\n.*" "" _wg_first "${_wg_out}")
        set(_wg_why "pip download wgpu==${CUBEC_WEBGPU_WHEEL_VERSION} failed (${_wg_rc}: ${_wg_first})")
      else()
        list(GET _wg_wheel 0 _wg_wheel)
        execute_process(
          COMMAND ${CMAKE_COMMAND} -E tar xf ${_wg_wheel} wgpu/resources/libwgpu_native-release.so
          WORKING_DIRECTORY ${CUBEC_WEBGPU_DIR} RESULT_VARIABLE _wg_rc)
        if(_wg_rc EQUAL 0 AND EXISTS ${CUBEC_WEBGPU_DIR}/wgpu/resources/libwgpu_native-release.so)
          file(RENAME ${CUBEC_WEBGPU_DIR}/wgpu/resources/libwgpu_native-release.so
               ${CUBEC_WEBGPU_LIBRARY_FILE})
          file(REMOVE_RECURSE ${CUBEC_WEBGPU_DIR}/wgpu)
        else()
          set(_wg_why "the wheel ${_wg_wheel} has no wgpu/resources/libwgpu_native-release.so")
        endif()
      endif()
    endif()
  endif()
endif()

if(EXISTS ${CUBEC_WEBGPU_LIBRARY_FILE})
  set(CUBEC_WEBGPU_AVAILABLE ON)
  message(STATUS "webgpu: wgpu-native from the wgpu ${CUBEC_WEBGPU_WHEEL_VERSION} wheel in "
                 "${CUBEC_WEBGPU_LIBRARY_FILE}: the webgpu tests (label webgpu) are registered")
else()
  set(CUBEC_WEBGPU_AVAILABLE OFF)
  message(STATUS "webgpu: no wgpu-native in the build tree (${_wg_why}): the webgpu backend is "
                 "built but its tests (label webgpu) are not registered")
endif()
