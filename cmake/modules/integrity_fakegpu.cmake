# Fake NVIDIA stack for tests: small real C shared libraries with the real sonames and entry points
# (tests/fakegpu/README.md lists them and the TG_FAKE_* variables that set their behaviour).
# Output: ${CMAKE_BINARY_DIR}/fakegpu/ (tg::testing::FakeGpuDir()). They are built uninstrumented
# even in sanitizer builds: they stand in for vendor binaries, which are never instrumented.
if(NOT TG_BUILD_TESTS OR TG_FUZZ)
  return()
endif()

set(TG_FAKEGPU_DIR ${CMAKE_BINARY_DIR}/fakegpu)
set(TG_FAKEGPU_SRC ${CMAKE_SOURCE_DIR}/tests/fakegpu)

# tg_fake_lib(<target> <source> <output name> <soversion or ""> [DEFINES ...] [LINK ...])
function(tg_fake_lib target source output_name soversion)
  cmake_parse_arguments(A "" "" "DEFINES;LINK" ${ARGN})
  add_library(${target} SHARED ${TG_FAKEGPU_SRC}/${source})
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME ${output_name}
    LIBRARY_OUTPUT_DIRECTORY ${TG_FAKEGPU_DIR}
    C_VISIBILITY_PRESET hidden
    COMPILE_OPTIONS "-O2;-Wall"
    LINK_OPTIONS "-Wl,--no-as-needed"
    # No RUNPATH: a fake provider must find its CUDA libraries only the way the real one does
    # (already loaded by truegreen's loader, or the system search), so leaving one out of a
    # --lib-path dir really makes it missing.
    SKIP_BUILD_RPATH ON)
  if(soversion)
    set_target_properties(${target} PROPERTIES SOVERSION ${soversion})
  endif()
  target_include_directories(${target} PRIVATE ${TG_FAKEGPU_SRC})
  if(A_DEFINES)
    target_compile_definitions(${target} PRIVATE ${A_DEFINES})
  endif()
  if(A_LINK)
    target_link_libraries(${target} PRIVATE ${A_LINK})
  endif()
endfunction()

tg_fake_lib(tg_fake_nvml fake_nvml.c nvidia-ml 1)
tg_fake_lib(tg_fake_cuda fake_cuda.c cuda 1)
tg_fake_lib(tg_fake_cudart fake_cudart.c cudart 13)
tg_fake_lib(tg_fake_cublas fake_cublas.c cublas 13)
tg_fake_lib(tg_fake_cublaslt fake_cublas.c cublasLt 13 DEFINES TG_FAKE_LT)
tg_fake_lib(tg_fake_curand fake_misc.c curand 10 DEFINES TG_FAKE_CURAND)
tg_fake_lib(tg_fake_nccl fake_misc.c nccl 2 DEFINES TG_FAKE_NCCL)
tg_fake_lib(tg_fake_cudnn fake_cudnn.c cudnn 9)
foreach(sub ops cnn adv graph heuristic engines_precompiled engines_runtime_compiled)
  tg_fake_lib(tg_fake_cudnn_${sub} fake_cudnn.c cudnn_${sub} 9 DEFINES TG_FAKE_CUDNN_SUB)
endforeach()
tg_fake_lib(tg_fake_nvinfer fake_nvinfer.c nvinfer 10)
tg_fake_lib(tg_fake_nvonnxparser fake_nvinfer.c nvonnxparser 10 DEFINES TG_FAKE_ONNXPARSER)
tg_fake_lib(tg_fake_provider_cuda fake_provider.c onnxruntime_providers_cuda ""
  LINK tg_fake_cudart tg_fake_cuda tg_fake_cublas tg_fake_cublaslt tg_fake_curand)
tg_fake_lib(tg_fake_provider_tensorrt fake_provider.c onnxruntime_providers_tensorrt ""
  DEFINES TG_FAKE_TENSORRT
  LINK tg_fake_cudart tg_fake_cuda tg_fake_nvinfer tg_fake_nvonnxparser tg_fake_cudnn)
# A GPU-flavor core: wraps the real CPU-built core (setup's test fixture, not the default pair) and
# lists the GPU providers (fake_ort_core.c); TG_FAKE_ORT_FLAVOR=cpu makes it that CPU build again.
tg_fake_lib(tg_fake_ort_core fake_ort_core.c onnxruntime ""
  DEFINES "TG_FAKE_REAL_ORT=\"${CMAKE_SOURCE_DIR}/third_party/onnxruntime-cpu/lib/libonnxruntime.so\""
  LINK ${CMAKE_DL_LIBS})
target_include_directories(tg_fake_ort_core SYSTEM PRIVATE ${TG_ORT_DIR}/include)

add_custom_target(tg_fakegpu ALL DEPENDS tg_fake_ort_core
  tg_fake_nvml tg_fake_cuda tg_fake_cudart tg_fake_cublas tg_fake_cublaslt tg_fake_curand
  tg_fake_nccl tg_fake_cudnn tg_fake_nvinfer tg_fake_nvonnxparser tg_fake_provider_cuda
  tg_fake_provider_tensorrt tg_fake_cudnn_ops tg_fake_cudnn_cnn tg_fake_cudnn_adv
  tg_fake_cudnn_graph tg_fake_cudnn_heuristic tg_fake_cudnn_engines_precompiled
  tg_fake_cudnn_engines_runtime_compiled)
# Tests of the integrity area run truegreen against the fakes: build the fakes first.
get_property(_tg_targets DIRECTORY ${CMAKE_SOURCE_DIR} PROPERTY BUILDSYSTEM_TARGETS)
foreach(t IN LISTS _tg_targets)
  if(t MATCHES "^integrity_.*_test$" OR t MATCHES "^(probe|policy|runtime)_unit_tests$" OR
     t STREQUAL "audit_image_ort_test")
    add_dependencies(${t} tg_fakegpu)
  endif()
endforeach()
