# Developer builds with TG_ONLY skip every benchmarks/ target; this builds benchmarks/runtime_bench.cc in a
# TG_ONLY release build too, so the runtime area can measure itself without the whole tree. The
# full build already defines the target (benchmarks/*_bench.cc glob), hence the guard.
if(NOT TG_BUILD_BENCH OR TG_SANITIZE OR TG_FUZZ OR TARGET runtime_bench)
  return()
endif()
find_package(benchmark REQUIRED)
add_executable(runtime_bench ${CMAKE_SOURCE_DIR}/benchmarks/runtime_bench.cc)
target_link_libraries(runtime_bench PRIVATE truegreen_core benchmark::benchmark)
target_include_directories(runtime_bench SYSTEM PRIVATE ${TG_ORT_DIR}/include)
target_compile_definitions(runtime_bench PRIVATE TG_SOURCE_DIR="${CMAKE_SOURCE_DIR}"
                           TG_BINARY_DIR="${CMAKE_BINARY_DIR}")
if(TARGET runtime_models)
  add_dependencies(runtime_bench runtime_models)
endif()
