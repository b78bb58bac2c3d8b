# Describes the ABI of the debug-info copy of libcubec.so (cmake/Abi.cmake) with abidw, then
# MODE=baseline: writes it to abi/libcubec.abi (make abi-baseline);
# MODE=check: compares the baseline with it (abidiff) and fails when a function or variable was
#   removed or changed (a type it reaches changed: a field moved, retyped, added). Added functions
#   pass. A field appended to a sized struct is compatible by cubec's rules but shows here too:
#   libabigail's has_data_member_inserted_at = end suppression also hid reordered fields
#   (libabigail 2.2), so such a commit regenerates the baseline as well (docs/api.md).
# Run with cmake -P and -DABIDW= -DABIDIFF= -DLIBRARY= -DHEADERS= -DBASELINE= -DCURRENT= -DMODE=.
if(NOT ABIDW OR NOT ABIDIFF)
  message(FATAL_ERROR "abidw/abidiff not found: apt-get install abigail-tools (make install-deps)")
endif()
set(_out ${CURRENT})
if(MODE STREQUAL "baseline")
  set(_out ${BASELINE})
endif()
# No locations, paths or compilation directories: the description changes only with the ABI.
execute_process(
  COMMAND ${ABIDW} --headers-dir ${HEADERS} --drop-private-types --no-show-locs
          --no-corpus-path --no-comp-dir-path --out-file ${_out} ${LIBRARY}
  RESULT_VARIABLE _rc ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "abidw ${LIBRARY} failed (${_rc}): ${_err}")
endif()
if(MODE STREQUAL "baseline")
  message(STATUS "wrote ${BASELINE}: commit it with the change and the version bump that made it "
                 "(docs/api.md, \"Versions and the ABI\")")
  return()
endif()
if(NOT EXISTS ${BASELINE})
  message(FATAL_ERROR "no ABI baseline ${BASELINE}: make abi-baseline, then commit it")
endif()
execute_process(
  COMMAND ${ABIDIFF} --no-show-locs ${BASELINE} ${_out}
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _report ERROR_VARIABLE _err)
# abidiff's status is a bit set: 1 error, 2 usage error, 4 an ABI change, 8 an incompatible one.
# A change (4) that is only additions passes; anything removed or changed fails.
set(_fail FALSE)
math(EXPR _bits_error "${_rc} & 3")
math(EXPR _bits_incompatible "${_rc} & 8")
if(_bits_error OR _bits_incompatible)
  set(_fail TRUE)
endif()
if(_report MATCHES "[1-9][0-9]* Removed|[1-9][0-9]* Changed")
  set(_fail TRUE)
endif()
if(_fail)
  message(FATAL_ERROR "the ABI of libcubec.so changed incompatibly against ${BASELINE} (abidiff "
                      "status ${_rc}):\n${_report}${_err}\nIf this is deliberate: bump the version "
                      "in cubec.h (docs/api.md, \"Versions and the ABI\"), run `make abi-baseline` "
                      "and commit abi/libcubec.abi with the change.")
endif()
if(_rc EQUAL 0)
  message(STATUS "the ABI matches ${BASELINE}")
else()
  message(STATUS "compatible additions to the ABI of ${BASELINE}:\n${_report}")
endif()
