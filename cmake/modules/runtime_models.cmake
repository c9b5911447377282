# Small ONNX models for the runtime tests and benchmark (tests/models/gen_runtime_models.py, run
# with Debian's python3-onnx). Output: ${CMAKE_BINARY_DIR}/models/runtime/. Generated at build time
# into the build tree; no model files live in git.
if(TG_FUZZ)
  return()
endif()

set(TG_RUNTIME_PYTHON /usr/bin/python3 CACHE FILEPATH "Python with onnx + numpy (python3-onnx)")
set(TG_RUNTIME_MODELS_DIR ${CMAKE_BINARY_DIR}/models/runtime)
set(TG_RUNTIME_MODELS_STAMP ${TG_RUNTIME_MODELS_DIR}/.complete)

add_custom_command(
  OUTPUT ${TG_RUNTIME_MODELS_STAMP}
  COMMAND ${TG_RUNTIME_PYTHON} ${CMAKE_SOURCE_DIR}/tests/models/gen_runtime_models.py
          --out ${TG_RUNTIME_MODELS_DIR}
  DEPENDS ${CMAKE_SOURCE_DIR}/tests/models/gen_runtime_models.py
  COMMENT "Generating runtime test models in ${TG_RUNTIME_MODELS_DIR}"
  VERBATIM)
add_custom_target(runtime_models ALL DEPENDS ${TG_RUNTIME_MODELS_STAMP})

# Tests and the benchmark that open the models must not build before they exist.
file(GLOB _tg_runtime_tests CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/runtime_*_test.cc)
foreach(f IN LISTS _tg_runtime_tests)
  get_filename_component(_n ${f} NAME_WE)
  if(TARGET ${_n})
    add_dependencies(${_n} runtime_models)
  endif()
endforeach()
foreach(t runtime_unit_tests runtime_gpu_tests runtime_bench)
  if(TARGET ${t})
    add_dependencies(${t} runtime_models)
  endif()
endforeach()
