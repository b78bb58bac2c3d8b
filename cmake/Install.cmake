# Installs the library (static and shared), the header, a CMake package (find_package(cubec)
# gives cubec::cubec, the shared library; the static archive is for pkg-config --static) and the
# pkg-config files (cubec.pc, and cubec-shared.pc that it requires; cmake/cubec.pc.in says why).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS cubec_shared EXPORT cubecTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES $<TARGET_FILE:cubec_static> DESTINATION ${CMAKE_INSTALL_LIBDIR})
# cubec_mpi (docs/mpi.md): its archive and header where it was built; without MPI its header would
# name an <mpi.h> the system lacks, so it is left out.
if(CUBEC_MPI_BUILT)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/cubec DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(FILES $<TARGET_FILE:cubec_mpi> DESTINATION ${CMAKE_INSTALL_LIBDIR})
else()
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/cubec DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          PATTERN cubec_mpi.h EXCLUDE)
endif()
install(FILES ${CUBEC_CDEF} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/cubec)

set_target_properties(cubec_shared PROPERTIES EXPORT_NAME cubec)
install(EXPORT cubecTargets NAMESPACE cubec:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cubec)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/cubecConfig.cmake.in
  ${CMAKE_BINARY_DIR}/cubecConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cubec)
# find_package(cubec 0.2) accepts what the soname accepts: the same minor version while the
# major version is 0, the same major version after (src/CMakeLists.txt).
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(_cubec_compat SameMinorVersion)
else()
  set(_cubec_compat SameMajorVersion)
endif()
write_basic_package_version_file(${CMAKE_BINARY_DIR}/cubecConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${_cubec_compat})
install(FILES ${CMAKE_BINARY_DIR}/cubecConfig.cmake ${CMAKE_BINARY_DIR}/cubecConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/cubec)

# The static archive needs the compiler stack's archives too: pkg-config --static lists them, by
# file name (-l:libX.a, searched on the linker's path) rather than by this machine's absolute
# paths, so the .pc holds on any machine with the same packages.
set(CUBEC_PC_STATIC_LIBS)
foreach(lib ${CUBEC_STATIC_COMPILER_LIBS})
  get_filename_component(_name ${lib} NAME)
  list(APPEND CUBEC_PC_STATIC_LIBS "-l:${_name}")
endforeach()
string(REPLACE ";" " " CUBEC_PC_STATIC_LIBS "${CUBEC_PC_STATIC_LIBS}")
foreach(pc cubec cubec-shared)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in ${CMAKE_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
