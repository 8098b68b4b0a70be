# The op layer shared by the GPU backends (gpu_backend.h): included by each
# GPU backend's cmake file; builds once however many include it.
if(KILN_GPU_LAYER)
  return()
endif()
set(KILN_GPU_LAYER ON)
file(GLOB KILN_GPU_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/backends/gpu/*.cpp
     ${CMAKE_SOURCE_DIR}/backends/gpu/ops/*.cpp)
set_source_files_properties(${KILN_GPU_SOURCES} PROPERTIES COMPILE_OPTIONS "-Wno-missing-field-initializers")
target_sources(kiln_objects PRIVATE ${KILN_GPU_SOURCES})
target_include_directories(kiln_objects PRIVATE ${CMAKE_SOURCE_DIR}/backends/gpu ${CMAKE_SOURCE_DIR}/backends/gpu/ops)
target_include_directories(kiln_internal INTERFACE ${CMAKE_SOURCE_DIR}/backends/gpu)
