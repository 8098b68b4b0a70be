# Install rules (included by the top CMakeLists.txt after engine/ and tools/).
#
#   cmake --install build --prefix P
#
# installs
#   P/include/kiln/            the runtime API: interpreter.h, session.h,
#                              tensor.h, status.h, types.h, the C API kiln.h
#                              and module.h (host modules)
#   P/lib/libkiln.a            self-contained (every object of the library,
#                              volk included); links -pthread and -ldl
#   P/lib/libkiln.so.*         versioned (SOVERSION = the major version)
#   P/bin/kiln-*               the user tools (whichever this build has)
#   P/lib/cmake/kiln/          kilnConfig.cmake, kilnConfigVersion.cmake and
#                              the exported targets: find_package(kiln) gives
#                              kiln::kiln (shared; static when
#                              kiln_USE_STATIC_LIBS is ON), kiln::kiln_shared
#                              and kiln::kiln_static
#   P/lib/pkgconfig/kiln.pc    pkg-config: `pkg-config --cflags --libs kiln`
#
# format.h, net_builder.h and passes.h are build-tree APIs and are not
# installed: they include the header flatc generates from schema/kiln.fbs
# (and NetBuilder and the passes work on FlatBuffers' object API), which an
# installed package would have to ship along with a matching FlatBuffers. An
# app of the installed package loads .kiln files (written by kiln-convert or
# a build-tree NetBuilder) and names element types with kiln::dtype (types.h).
include(CMakePackageConfigHelpers)

set(KILN_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)
set(KILN_PUBLIC_HEADERS interpreter.h session.h tensor.h status.h types.h kiln.h module.h)
list(TRANSFORM KILN_PUBLIC_HEADERS PREPEND ${CMAKE_SOURCE_DIR}/engine/include/kiln/)
install(FILES ${KILN_PUBLIC_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln)

set_target_properties(kiln_static PROPERTIES EXPORT_NAME kiln_static)
set_target_properties(kiln_shared PROPERTIES EXPORT_NAME kiln_shared)
install(TARGETS kiln_static kiln_shared EXPORT kilnTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT kilnTargets NAMESPACE kiln:: DESTINATION ${KILN_CMAKE_INSTALL_DIR})

# The user tools this build has (a host-only build has no converter, hence
# no kiln-run, kiln-convert, kiln-inspect, kiln-conformance, kiln-bench,
# kiln-quantize or kiln-compile).
# They link libkiln.a, so they need no library path. Not installed: the
# demo's model writer (kiln-demo-model) and the test helpers.
foreach(tool kiln-run kiln-convert kiln-inspect kiln-conformance kiln-bench kiln-quantize kiln-compile kiln-kernelbench)
  if(TARGET ${tool})
    install(TARGETS ${tool} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  endif()
endforeach()

configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/kilnConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/package/kilnConfig.cmake
                              INSTALL_DESTINATION ${KILN_CMAKE_INSTALL_DIR})
# 0.x: a minor version may break the API, so only the same minor version matches.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/package/kilnConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/package/kilnConfig.cmake ${CMAKE_BINARY_DIR}/package/kilnConfigVersion.cmake
        DESTINATION ${KILN_CMAKE_INSTALL_DIR})

# kiln.pc locates the prefix from its own folder (${pcfiledir}), so the
# installed tree may be moved; the libraries a static link needs besides
# libkiln.a go in Libs.private (`pkg-config --static`).
# (An absolute CMAKE_INSTALL_LIBDIR or INCLUDEDIR is written as it is.)
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(KILN_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(KILN_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH KILN_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
  string(REGEX REPLACE "/$" "" KILN_PC_TO_PREFIX "${KILN_PC_TO_PREFIX}")
  set(KILN_PC_PREFIX "\${pcfiledir}/${KILN_PC_TO_PREFIX}")
  set(KILN_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(KILN_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(KILN_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
set(KILN_PC_LIBS_PRIVATE "")
if(CMAKE_THREAD_LIBS_INIT)
  list(APPEND KILN_PC_LIBS_PRIVATE ${CMAKE_THREAD_LIBS_INIT})
elseif(CMAKE_USE_PTHREADS_INIT)
  list(APPEND KILN_PC_LIBS_PRIVATE -pthread)  # in libc (glibc 2.34+); the flag is harmless
endif()
# dlopen: host modules (always), the Vulkan loader / the OpenCL ICD loader
foreach(lib ${CMAKE_DL_LIBS})
  list(APPEND KILN_PC_LIBS_PRIVATE -l${lib})
endforeach()
list(JOIN KILN_PC_LIBS_PRIVATE " " KILN_PC_LIBS_PRIVATE)
configure_file(${CMAKE_SOURCE_DIR}/cmake/kiln.pc.in ${CMAKE_BINARY_DIR}/package/kiln.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/package/kiln.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
