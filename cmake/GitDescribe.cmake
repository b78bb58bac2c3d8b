# Run at build time (not configure time) so that `cubec version` and `cubec bench --json` name
# the commit that was actually built. Rewrites the header only when the description changes.
execute_process(COMMAND git describe --always --dirty --tags WORKING_DIRECTORY ${SOURCE_DIR}
                OUTPUT_VARIABLE describe OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT describe)
  set(describe "unknown")
endif()
set(content "#define CUBEC_GIT_DESCRIBE \"${describe}\"\n")
if(EXISTS ${OUTPUT})
  file(READ ${OUTPUT} old)
endif()
if(NOT "${old}" STREQUAL "${content}")
  file(WRITE ${OUTPUT} "${content}")
endif()
