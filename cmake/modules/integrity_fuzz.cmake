# libFuzzer targets: every src/<module>/*_fuzz.cc (the matrix parser, the snapshot reader, and
# parsed snapshots fed through the admission engine), built only with the fuzz preset (TG_FUZZ=ON,
# clang). scripts/fuzz.sh runs every build-fuzz/bin/*_fuzz briefly with seeds from
# tests/fuzz_corpus/<target>/. In fuzz mode truegreen_core holds only the parsers and the
# admission engine (see CMakeLists.txt).
if(NOT TG_FUZZ)
  return()
endif()
# Instrument the core for coverage, or libFuzzer would mutate blind; whatever links it needs the
# ASan/UBSan runtimes, and the fuzz targets add libFuzzer's main on top.
target_compile_options(truegreen_core PRIVATE -fsanitize=fuzzer-no-link,address,undefined)
target_link_options(truegreen_core INTERFACE -fsanitize=address,undefined)
file(GLOB _tg_fuzzers CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/*/*_fuzz.cc)
foreach(src IN LISTS _tg_fuzzers)
  get_filename_component(_name ${src} NAME_WE)
  add_executable(${_name} ${src})
  target_compile_options(${_name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(${_name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(${_name} PRIVATE truegreen_core)
endforeach()
