# The OpenCL backend: built when the OpenCL headers (Debian opencl-headers)
# and clang are present. Entry points are loaded at run time (cl_loader.h),
# so nothing links against libOpenCL. Every shaders/opencl/*.cl is checked by
# clang at build time as OpenCL C 1.2, in its fp32 form and its 16-bit
# variant (a kernel that does not compile fails the build), then embedded.
find_path(OPENCL_INCLUDE_DIR CL/cl.h)
find_program(KILN_CLANG NAMES clang clang-14 clang-15 clang-16)
set(KILN_OPENCL_DEFAULT OFF)
if(OPENCL_INCLUDE_DIR AND KILN_CLANG)
  set(KILN_OPENCL_DEFAULT ON)
endif()
option(KILN_OPENCL "Build the OpenCL backend" ${KILN_OPENCL_DEFAULT})
if(NOT KILN_OPENCL)
  message(STATUS "OpenCL backend: off (needs CL/cl.h and clang)")
  return()
endif()
if(NOT KILN_OPENCL_DEFAULT)
  message(FATAL_ERROR "KILN_OPENCL=ON but CL/cl.h or clang is missing")
endif()
message(STATUS "OpenCL backend: on (kernels checked with ${KILN_CLANG})")

set(KILN_CL_DIR ${CMAKE_SOURCE_DIR}/shaders/opencl)
set(KILN_CL_GEN ${CMAKE_BINARY_DIR}/generated/opencl)
file(MAKE_DIRECTORY ${KILN_CL_GEN})
file(GLOB KILN_CL_KERNELS CONFIGURE_DEPENDS ${KILN_CL_DIR}/*.cl)
set(KILN_CL_STAMPS "")
foreach(src ${KILN_CL_KERNELS})
  get_filename_component(stem ${src} NAME_WE)
  if(stem STREQUAL "common")
    continue()
  endif()
  set(stamp ${KILN_CL_GEN}/${stem}.checked)
  set(check ${KILN_CLANG} -x cl -cl-std=CL1.2 -Xclang -finclude-default-header -fsyntax-only -Werror
      -include ${KILN_OP_CODES} -include ${KILN_CL_DIR}/common.cl)
  add_custom_command(OUTPUT ${stamp}
    COMMAND ${check} ${src}
    COMMAND ${check} -DKILN_FP16 -DKILN_UNIT16 ${src}
    COMMAND ${CMAKE_COMMAND} -E touch ${stamp}
    DEPENDS ${src} ${KILN_CL_DIR}/common.cl ${KILN_OP_CODES}
    COMMENT "OpenCL C check ${stem}.cl" VERBATIM)
  list(APPEND KILN_CL_STAMPS ${stamp})
endforeach()
set(KILN_CL_REGISTRY ${KILN_CL_GEN}/cl_sources.cpp)
add_custom_command(OUTPUT ${KILN_CL_REGISTRY}
  COMMAND ${CMAKE_COMMAND} -DOUT=${KILN_CL_REGISTRY} -DDIR=${KILN_CL_DIR} -DOP_CODES=${KILN_OP_CODES}
          -P ${CMAKE_SOURCE_DIR}/backends/opencl/embed_cl.cmake
  DEPENDS ${KILN_CL_KERNELS} ${KILN_CL_STAMPS} ${KILN_OP_CODES} ${CMAKE_SOURCE_DIR}/backends/opencl/embed_cl.cmake
  COMMENT "Embedding OpenCL kernels" VERBATIM)

include(${CMAKE_SOURCE_DIR}/backends/gpu/gpu.cmake)
file(GLOB KILN_CL_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/backends/opencl/*.cpp)
set_source_files_properties(${KILN_CL_SOURCES} PROPERTIES COMPILE_OPTIONS "-Wno-missing-field-initializers")
target_sources(kiln_objects PRIVATE ${KILN_CL_SOURCES} ${KILN_CL_REGISTRY})
target_include_directories(kiln_objects PRIVATE ${CMAKE_SOURCE_DIR}/backends/opencl ${OPENCL_INCLUDE_DIR})
target_compile_definitions(kiln_objects PUBLIC KILN_HAVE_OPENCL=1 CL_TARGET_OPENCL_VERSION=120)
target_link_libraries(kiln_objects PUBLIC ${CMAKE_DL_LIBS})
foreach(lib kiln_static kiln_shared)
  target_link_libraries(${lib} PUBLIC ${CMAKE_DL_LIBS})
  target_compile_definitions(${lib} PUBLIC KILN_HAVE_OPENCL=1)
endforeach()
target_include_directories(kiln_internal INTERFACE ${CMAKE_SOURCE_DIR}/backends/opencl ${OPENCL_INCLUDE_DIR})
target_compile_definitions(kiln_internal INTERFACE CL_TARGET_OPENCL_VERSION=120)
