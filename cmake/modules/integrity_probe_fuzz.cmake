# libFuzzer target for the snapshot reader (src/probe/snapshot_fuzz.cc), built only with the fuzz
# preset (TG_FUZZ=ON, clang); scripts/fuzz.sh runs every build-fuzz/bin/*_fuzz briefly.
if(NOT TG_FUZZ)
  return()
endif()
# The parsers live in truegreen_core: instrument it for coverage (once, whichever fuzz module
# comes first), or libFuzzer would mutate blind.
get_property(_tg_fuzz_core GLOBAL PROPERTY TG_FUZZ_CORE_INSTRUMENTED)
if(NOT _tg_fuzz_core)
  target_compile_options(truegreen_core PRIVATE -fsanitize=fuzzer-no-link,address,undefined)
  set_property(GLOBAL PROPERTY TG_FUZZ_CORE_INSTRUMENTED TRUE)
endif()
add_executable(snapshot_fuzz ${CMAKE_SOURCE_DIR}/src/probe/snapshot_fuzz.cc)
target_compile_options(snapshot_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_options(snapshot_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_libraries(snapshot_fuzz PRIVATE truegreen_core)
