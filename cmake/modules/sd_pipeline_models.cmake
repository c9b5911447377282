# Small random-weight Stable Diffusion pipelines of the published architectures (tools/gen_sd.py,
# Debian's python3-onnx; width 0.1, depth 0.25) for the sd tests, the step benchmark and
# `make demo`. Output: ${CMAKE_BINARY_DIR}/models/sd-tiny/<variant>/ (sd15-legacy, sd15-optimum,
# sd15-optimum-fp16, sd21-optimum, sdxl-optimum, sdxl-optimum-fp16, bad-shape-mismatch). The UNet
# of each is written with external data, as real exports are. Generated at build time (a few
# seconds); no model files live in git.
if(TG_FUZZ)
  return()
endif()

set(TG_SD_PYTHON /usr/bin/python3 CACHE FILEPATH "Python with onnx + numpy (Debian's python3-onnx)")
set(TG_SD_TINY_DIR ${CMAKE_BINARY_DIR}/models/sd-tiny)
set(TG_SD_TINY_STAMP ${TG_SD_TINY_DIR}/.complete)
set(TG_SD_CLIP_MERGES ${CMAKE_SOURCE_DIR}/data/clip/bpe_simple_vocab_16e6.txt.gz
    CACHE FILEPATH "CLIP merges (bpe_simple_vocab_16e6.txt.gz) for the pipelines' tokenizers")

add_custom_command(
  OUTPUT ${TG_SD_TINY_STAMP}
  COMMAND ${TG_SD_PYTHON} ${CMAKE_SOURCE_DIR}/tools/gen_sd.py --out ${TG_SD_TINY_DIR}
          --clip-merges ${TG_SD_CLIP_MERGES} --external-data unet
  DEPENDS ${CMAKE_SOURCE_DIR}/tools/gen_sd.py ${CMAKE_SOURCE_DIR}/tools/sd_arch.py
          ${CMAKE_SOURCE_DIR}/tools/sd_graph.py ${CMAKE_SOURCE_DIR}/tools/clip_vocab.py
  COMMENT "Generating small Stable Diffusion pipelines in ${TG_SD_TINY_DIR}"
  VERBATIM)
add_custom_target(sd_tiny_models ALL DEPENDS ${TG_SD_TINY_STAMP})

# Tests that open the pipelines must not start before they exist.
foreach(t sd_unit_tests sd_pipeline_cli_test sd_generator_test sd_workload_test runtime_unit_tests
    sd_attention_fusion_test)
  if(TARGET ${t})
    add_dependencies(${t} sd_tiny_models)
  endif()
endforeach()
