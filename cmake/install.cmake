# `cmake --install`: the public headers, libnpumem.so and libnpumem.a, a CMake package
# (find_package(npumem) gives npumem::npumem, the shared library, and
# npumem::npumem_static) and a pkg-config file, npumem.pc.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(npumem_package_dir ${CMAKE_INSTALL_LIBDIR}/cmake/npumem)

set_target_properties(npumem_shared PROPERTIES EXPORT_NAME npumem)
set_target_properties(npumem PROPERTIES EXPORT_NAME npumem_static)
# npumem_warnings is in the export set only because a static library's private links
# travel with it as link-only entries; it adds nothing to a consumer's link line.
install(TARGETS npumem npumem_shared npumem_warnings EXPORT npumemTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/npumem DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")

install(EXPORT npumemTargets NAMESPACE npumem:: DESTINATION ${npumem_package_dir})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/npumemConfig.cmake.in
  ${PROJECT_BINARY_DIR}/npumemConfig.cmake INSTALL_DESTINATION ${npumem_package_dir})
# 0.x: a new minor version may change the ABI.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/npumemConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/npumemConfig.cmake
              ${PROJECT_BINARY_DIR}/npumemConfigVersion.cmake
        DESTINATION ${npumem_package_dir})

# npumem.pc finds its prefix from where it lies, so an installed tree can be moved.
if(IS_ABSOLUTE ${CMAKE_INSTALL_LIBDIR} OR IS_ABSOLUTE ${CMAKE_INSTALL_INCLUDEDIR})
  set(npumem_pc_prefix ${CMAKE_INSTALL_PREFIX})
else()
  file(RELATIVE_PATH npumem_pc_up /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
  string(REGEX REPLACE "/$" "" npumem_pc_up ${npumem_pc_up})
  set(npumem_pc_prefix "\${pcfiledir}/${npumem_pc_up}")
endif()
# The C++ runtime too: `pkg-config --static` links libnpumem.a, whose C consumers link
# with the C driver.
set(npumem_pc_private_libs -pthread -lstdc++ -lm)
if(NPUMEM_CUDA_ENABLED)
  list(APPEND npumem_pc_private_libs -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -ldl -lrt)
endif()
list(JOIN npumem_pc_private_libs " " npumem_pc_private_libs)
configure_file(${CMAKE_CURRENT_LIST_DIR}/npumem.pc.in ${PROJECT_BINARY_DIR}/npumem.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/npumem.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
