# install(): the libraries, their headers, the command-line tools, an exported CMake package
# (find_package(topocoll) gives topocoll::<library> targets) and a pkg-config file (topocoll.pc).
# Included last from the top-level CMakeLists.txt, once every target exists.
#
#   cmake --install build --prefix /opt/topocoll
#   find_package(topocoll REQUIRED)  +  target_link_libraries(app PRIVATE topocoll::simulator)
#   pkg-config --cflags --libs topocoll
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The libraries a user links, in dependency order (a library only depends on those before it).
set(topocoll_installed_libraries topocoll_common topocoll_topologies topocoll_algorithms topocoll_simulator
                                 topocoll_runtime)
foreach(extra topocoll_simgrid topocoll_experiments topocoll_runtime_mpi topocoll_runtime_ucx topocoll_bench
              topocoll_runtime_cuda topocoll_runtime_nccl topocoll_nccl)
  if(TARGET ${extra})
    list(APPEND topocoll_installed_libraries ${extra})
  endif()
endforeach()

set(topocoll_include_subdir ${CMAKE_INSTALL_INCLUDEDIR}/topocoll)
foreach(lib IN LISTS topocoll_installed_libraries)
  get_target_property(type ${lib} TYPE)
  # Headers are included as "algorithms/ir/schedule.hpp": the source root in the build tree, the
  # installed include/topocoll/ after install.
  if(type STREQUAL "INTERFACE_LIBRARY")
    continue()
  endif()
  set_target_properties(${lib} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES
    "$<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>;$<INSTALL_INTERFACE:${topocoll_include_subdir}>")
  string(REPLACE "topocoll_" "" export_name ${lib})
  set_target_properties(${lib} PROPERTIES EXPORT_NAME ${export_name})
endforeach()
if(TARGET topocoll_nccl)
  set_target_properties(topocoll_nccl PROPERTIES EXPORT_NAME nccl_headers)
endif()

install(TARGETS ${topocoll_installed_libraries} EXPORT topocollTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
foreach(tool topocoll topocoll-bench)
  if(TARGET ${tool})
    install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()
foreach(dir common topologies algorithms simulator runtime experiments)
  if(IS_DIRECTORY ${PROJECT_SOURCE_DIR}/${dir})
    install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/ DESTINATION ${topocoll_include_subdir}/${dir}
            FILES_MATCHING PATTERN "*.hpp" PATTERN "*.cuh" PATTERN "testdata" EXCLUDE PATTERN "__pycache__" EXCLUDE)
  endif()
endforeach()

set(topocoll_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/topocoll)
install(EXPORT topocollTargets NAMESPACE topocoll:: DESTINATION ${topocoll_cmake_dir})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/topocollConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/topocollConfig.cmake INSTALL_DESTINATION ${topocoll_cmake_dir})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/topocollConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/topocollConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/topocollConfigVersion.cmake
        DESTINATION ${topocoll_cmake_dir})

# pkg-config: the SimGrid-free core (simulator, algorithms, topologies, common). The libraries are
# static, so their own dependencies are part of Requires and Libs.
set(topocoll_pc_libs "-ltopocoll_simulator -ltopocoll_algorithms -ltopocoll_topologies -ltopocoll_common")
# A sanitizer build's libraries call the sanitizer runtime: whatever links them links it too.
if(TOPOCOLL_SANITIZE)
  set_property(TARGET topocoll_common APPEND PROPERTY INTERFACE_LINK_OPTIONS -fsanitize=${TOPOCOLL_SANITIZE})
  string(APPEND topocoll_pc_libs " -fsanitize=${TOPOCOLL_SANITIZE}")
endif()
# Relocatable: the prefix is found from the .pc file's own folder.
file(RELATIVE_PATH topocoll_pc_to_prefix /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${CMAKE_CURRENT_LIST_DIR}/topocoll.pc.in ${CMAKE_CURRENT_BINARY_DIR}/topocoll.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/topocoll.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
