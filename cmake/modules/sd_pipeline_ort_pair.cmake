# tests/sd_core_flavor_image_test.cc generates with every bundled pipeline under both ONNX Runtime
# cores (setup's GPU-flavor pair and the CPU-built fixture): build the pipelines first. Sorted
# after sd_pipeline_models.cmake, which defines their target.
if(TARGET sd_core_flavor_image_test AND TARGET sd_tiny_models)
  add_dependencies(sd_core_flavor_image_test sd_tiny_models)
endif()
