# The Vulkan backend: built when glslangValidator, the Vulkan headers and
# volk are present (Debian: glslang-tools, libvulkan-dev, libvulkan-volk-dev).
# Shaders in shaders/vulkan/*.comp become SPIR-V at build time, embedded as
# uint32_t arrays (glslangValidator --vn) with a generated registry; a shader
# that does not compile fails the build.
find_program(GLSLANG_VALIDATOR glslangValidator)
find_path(VOLK_INCLUDE_DIR volk.h)
find_file(VOLK_SOURCE volk.c PATHS ${VOLK_INCLUDE_DIR} NO_DEFAULT_PATH)
find_path(VULKAN_INCLUDE_DIR vulkan/vulkan.h)
set(KILN_VULKAN_DEFAULT OFF)
if(GLSLANG_VALIDATOR AND VOLK_SOURCE AND VULKAN_INCLUDE_DIR)
  set(KILN_VULKAN_DEFAULT ON)
endif()
option(KILN_VULKAN "Build the Vulkan backend" ${KILN_VULKAN_DEFAULT})
if(NOT KILN_VULKAN)
  message(STATUS "Vulkan backend: off (needs glslangValidator, vulkan/vulkan.h and volk)")
  return()
endif()
if(NOT KILN_VULKAN_DEFAULT)
  message(FATAL_ERROR "KILN_VULKAN=ON but glslangValidator, vulkan/vulkan.h or volk.c is missing")
endif()
message(STATUS "Vulkan backend: on (${GLSLANG_VALIDATOR})")

set(KILN_SHADER_DIR ${CMAKE_SOURCE_DIR}/shaders/vulkan)
set(KILN_SPV_DIR ${CMAKE_BINARY_DIR}/generated/spirv)
file(MAKE_DIRECTORY ${KILN_SPV_DIR})
file(GLOB KILN_VK_SHADERS CONFIGURE_DEPENDS ${KILN_SHADER_DIR}/*.comp)
file(GLOB KILN_VK_SHADER_INCLUDES CONFIGURE_DEPENDS ${KILN_SHADER_DIR}/*.glsl)
set(KILN_SPV_HEADERS "")
set(KILN_SPV_INCLUDES "")
set(KILN_SPV_ENTRIES "")
# Each shader is compiled once, plus one 16-bit variant where its source
# asks for one by the types it uses (common.glsl): STORE_T (float tensors)
# gives <stem>_f16 with fp16 storage, picked by the backend in fp16 mode;
# UNIT_T (moved words) gives <stem>_u16, moving 16-bit elements.
function(kiln_spirv stem src defines)
  set(out ${KILN_SPV_DIR}/${stem}.spv.h)
  add_custom_command(OUTPUT ${out}
    COMMAND ${GLSLANG_VALIDATOR} -V --target-env vulkan1.1 -I${KILN_SHADER_DIR} -I${KILN_GEN_DIR} ${defines} --vn kiln_spv_${stem} -o ${out} ${src}
    DEPENDS ${src} ${KILN_VK_SHADER_INCLUDES} ${KILN_OP_CODES}
    COMMENT "SPIR-V ${stem}" VERBATIM)
  set(KILN_SPV_HEADERS ${KILN_SPV_HEADERS} ${out} PARENT_SCOPE)
  set(KILN_SPV_INCLUDES "${KILN_SPV_INCLUDES}#include \"${stem}.spv.h\"\n" PARENT_SCOPE)
  set(KILN_SPV_ENTRIES "${KILN_SPV_ENTRIES}    {\"${stem}\", kiln_spv_${stem}, sizeof(kiln_spv_${stem})},\n" PARENT_SCOPE)
endfunction()
foreach(src ${KILN_VK_SHADERS})
  get_filename_component(stem ${src} NAME_WE)
  kiln_spirv(${stem} ${src} "")
  # The types a shader uses, in its source or in a shader include of its own
  # (common.glsl, which defines both, aside).
  file(STRINGS ${src} uses_store REGEX "STORE_T")
  file(STRINGS ${src} uses_unit REGEX "UNIT_T")
  file(STRINGS ${src} uses_texel REGEX "KILN_TEXEL")
  file(STRINGS ${src} includes REGEX "^#include \"[a-z0-9_]+[.]glsl\"")
  foreach(line ${includes})
    string(REGEX REPLACE "^#include \"([a-z0-9_]+[.]glsl)\".*" "\\1" inc "${line}")
    if(NOT inc STREQUAL "common.glsl")
      file(STRINGS ${KILN_SHADER_DIR}/${inc} inc_store REGEX "STORE_T")
      file(STRINGS ${KILN_SHADER_DIR}/${inc} inc_unit REGEX "UNIT_T")
      file(STRINGS ${KILN_SHADER_DIR}/${inc} inc_texel REGEX "KILN_TEXEL")
      list(APPEND uses_store ${inc_store})
      list(APPEND uses_unit ${inc_unit})
      list(APPEND uses_texel ${inc_texel})
    endif()
  endforeach()
  # KILN_F64 (summing in double): a <stem>_f64 variant for devices with
  # shaderFloat64, which the op layer asks for by name.
  file(STRINGS ${src} uses_f64 REGEX "KILN_F64")
  if(uses_f64)
    kiln_spirv(${stem}_f64 ${src} "-DKILN_F64")
  endif()
  # KILN_INT8DOT: <stem>_dp (and <stem>_f64_dp) with SPIR-V's packed int8
  # dot products, for devices with shaderIntegerDotProduct.
  file(STRINGS ${src} uses_int8dot REGEX "KILN_INT8DOT")
  if(uses_int8dot)
    kiln_spirv(${stem}_dp ${src} "-DKILN_INT8DOT")
    if(uses_f64)
      kiln_spirv(${stem}_f64_dp ${src} "-DKILN_F64;-DKILN_INT8DOT")
    endif()
  endif()
  if(uses_store AND uses_unit)
    message(FATAL_ERROR "${src}: a shader uses STORE_T or UNIT_T, not both")
  elseif(uses_store)
    kiln_spirv(${stem}_f16 ${src} "-DKILN_FP16")
  elseif(uses_unit)
    kiln_spirv(${stem}_u16 ${src} "-DKILN_UNIT16")
  endif()
  # KILN_FP16_MATH: <stem>_f16m (and <stem>_f16m_tx), fp16 storage and half
  # multiply-adds, for devices with shaderFloat16 at precision low.
  file(STRINGS ${src} uses_math16 REGEX "KILN_FP16_MATH")
  if(uses_math16)
    kiln_spirv(${stem}_f16m ${src} "-DKILN_FP16;-DKILN_FP16_MATH")
    if(uses_texel)
      kiln_spirv(${stem}_f16m_tx ${src} "-DKILN_FP16;-DKILN_FP16_MATH;-DKILN_TEXEL")
    endif()
  endif()
  # KILN_TEXEL: <stem>_tx (and <stem>_f16_tx) reading some bindings as
  # uniform texel buffers (GpuBinding::texel), on devices that take them.
  if(uses_texel)
    kiln_spirv(${stem}_tx ${src} "-DKILN_TEXEL")
    if(uses_store)
      kiln_spirv(${stem}_f16_tx ${src} "-DKILN_FP16;-DKILN_TEXEL")
    endif()
  endif()
endforeach()
set(KILN_SPV_REGISTRY ${KILN_SPV_DIR}/spirv_registry.cpp)
file(CONFIGURE OUTPUT ${KILN_SPV_REGISTRY} CONTENT "// Generated by backends/vulkan/vulkan.cmake.
#include <cstring>

#include \"vk_shaders.h\"
${KILN_SPV_INCLUDES}
namespace kiln {
const SpirvBlob* FindSpirv(const char* name) {
  static const SpirvBlob kBlobs[] = {
${KILN_SPV_ENTRIES}  };
  for (const SpirvBlob& b : kBlobs)
    if (std::strcmp(b.name, name) == 0) return &b;
  return nullptr;
}
}  // namespace kiln
")
set_source_files_properties(${KILN_SPV_REGISTRY} PROPERTIES OBJECT_DEPENDS "${KILN_SPV_HEADERS}")
add_custom_target(kiln_spirv DEPENDS ${KILN_SPV_HEADERS})
add_dependencies(kiln_spirv kiln_schema_gen)  # kiln_op_codes.h

include(${CMAKE_SOURCE_DIR}/backends/gpu/gpu.cmake)
file(GLOB KILN_VK_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/backends/vulkan/*.cpp)
# `VkFooInfo info{VK_STRUCTURE_TYPE_FOO_INFO};` zero-fills the rest on purpose.
set_source_files_properties(${KILN_VK_SOURCES} PROPERTIES COMPILE_OPTIONS "-Wno-missing-field-initializers")
target_sources(kiln_objects PRIVATE ${KILN_VK_SOURCES} ${KILN_SPV_REGISTRY} ${VOLK_SOURCE})
add_dependencies(kiln_objects kiln_spirv)
target_include_directories(kiln_objects PRIVATE ${CMAKE_SOURCE_DIR}/backends/vulkan ${KILN_SPV_DIR} ${VOLK_INCLUDE_DIR})
target_compile_definitions(kiln_objects PUBLIC KILN_HAVE_VULKAN=1)
target_compile_definitions(kiln_objects PRIVATE VK_NO_PROTOTYPES)
# volk.c is third-party C: our warning flags are not its business.
set_source_files_properties(${VOLK_SOURCE} PROPERTIES COMPILE_OPTIONS "-w")
target_link_libraries(kiln_objects PUBLIC ${CMAKE_DL_LIBS})
foreach(lib kiln_static kiln_shared)
  target_link_libraries(${lib} PUBLIC ${CMAKE_DL_LIBS})
  target_compile_definitions(${lib} PUBLIC KILN_HAVE_VULKAN=1)
endforeach()
target_include_directories(kiln_internal INTERFACE ${CMAKE_SOURCE_DIR}/backends/vulkan ${VOLK_INCLUDE_DIR})
target_compile_definitions(kiln_internal INTERFACE VK_NO_PROTOTYPES)
