# `cmake --install`: the public headers, libdgtune_runtime (shared, with its soname, and static), the dgtune
# executable, a CMake package (find_package(dgtune) -> dgtune::runtime, dgtune::runtime_static) and a pkg-config
# file (dgtune.pc) for builds without CMake. Included by the top-level CMakeLists.txt when DGTUNE_INSTALL is on.
include(CMakePackageConfigHelpers)

set(DGT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/dgtune)
install(TARGETS dgtune_runtime_shared dgtune_runtime EXPORT dgtuneTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/loader/include/dgtune DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET dgtune)
  install(TARGETS dgtune RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(EXPORT dgtuneTargets NAMESPACE dgtune:: DESTINATION ${DGT_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/dgtuneConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/dgtuneConfig.cmake INSTALL_DESTINATION ${DGT_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/dgtuneConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/dgtuneConfig.cmake ${PROJECT_BINARY_DIR}/dgtuneConfigVersion.cmake
        DESTINATION ${DGT_CMAKE_DIR})

# pkg-config: the shared library (its CUDA dependencies are DT_NEEDED entries), and the CUDA headers that
# <dgtune/gemm.hpp> includes (cuda_runtime_api.h).
set(DGT_PC_CUDA_INCLUDE "${CUDAToolkit_INCLUDE_DIRS}")
list(GET DGT_PC_CUDA_INCLUDE 0 DGT_PC_CUDA_INCLUDE)
# Relocatable: the prefix is found from the .pc file's own folder (pkg-config's ${pcfiledir}), so a package
# installed with `cmake --install --prefix DIR` (another prefix than the configured one) or moved still resolves.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(DGT_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  string(REGEX REPLACE "[^/]+" ".." DGT_PC_UP "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
  set(DGT_PC_PREFIX "\${pcfiledir}/${DGT_PC_UP}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/dgtune.pc.in ${PROJECT_BINARY_DIR}/dgtune.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/dgtune.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
