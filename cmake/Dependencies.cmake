# Debian 12's shared libshaderc leaves glslang/SPIRV-Tools symbols undefined (see
# ../shared/PLATFORM.md), so the compiler stack is linked from its static archives. SPIRV-Cross
# and inih are linked statically too, so the binaries run on machines that have only a Vulkan
# loader (the GPU machine has nothing else).
# The library needs only the loader and its headers. CMake 3.24+'s FindVulkan asks for the glslc
# and glslangValidator tools whatever the caller lists, and reported Debian's missing
# glslangValidator as "missing components", which reads like a missing dependency; so it is
# asked quietly and the result said here. (The tests find glslc themselves: tests/CMakeLists.txt.)
find_package(Vulkan REQUIRED QUIET)
message(STATUS "Found Vulkan: ${Vulkan_LIBRARY} (version ${Vulkan_VERSION})")
find_package(PkgConfig REQUIRED)
pkg_check_modules(INIH REQUIRED IMPORTED_TARGET inih)
find_package(Threads REQUIRED)

set(_libdir /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE})
set(CUBEC_STATIC_COMPILER_LIBS)
foreach(lib shaderc_combined glslang MachineIndependent GenericCodeGen OSDependent OGLCompiler
            SPIRV SPIRV-Tools-opt SPIRV-Tools spirv-cross-c spirv-cross-core spirv-cross-glsl
            spirv-cross-reflect spirv-cross-msl spirv-cross-hlsl spirv-cross-cpp spirv-cross-util
            inih)
  find_library(CUBEC_LIB_${lib} NAMES lib${lib}.a PATHS ${_libdir} NO_DEFAULT_PATH REQUIRED)
  list(APPEND CUBEC_STATIC_COMPILER_LIBS ${CUBEC_LIB_${lib}})
endforeach()
find_library(CUBEC_LIB_cmocka NAMES cmocka)
