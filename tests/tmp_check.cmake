# The temporary directory of the tests (tests/CMakeLists.txt, test_tmp_setup / test_tmp_empty):
#   cmake -DDIR=<dir> -DMODE=setup -P tmp_check.cmake   makes DIR, empty
#   cmake -DDIR=<dir> -DMODE=check -P tmp_check.cmake   fails naming what tests left in DIR
#                                                        (then removes it, so the next run starts
#                                                        clean)
if(NOT DIR)
  message(FATAL_ERROR "tmp_check.cmake: DIR is not set")
endif()
if(MODE STREQUAL "setup")
  file(REMOVE_RECURSE "${DIR}")
  file(MAKE_DIRECTORY "${DIR}")
elseif(MODE STREQUAL "check")
  file(GLOB _left LIST_DIRECTORIES true RELATIVE "${DIR}" "${DIR}/*")
  if(_left)
    list(JOIN _left "\n  " _names)
    file(REMOVE_RECURSE "${DIR}")
    message(FATAL_ERROR "tests left these in their TMPDIR (${DIR}); each test must remove what "
                        "it makes:\n  ${_names}")
  endif()
  message(STATUS "TMPDIR ${DIR} is empty")
else()
  message(FATAL_ERROR "tmp_check.cmake: MODE must be setup or check, not '${MODE}'")
endif()
