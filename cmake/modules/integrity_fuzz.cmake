# libFuzzer targets of the policy module (src/policy/*_fuzz.cc: the matrix parser, and the
# snapshot reader feeding the admission engine), built only with the fuzz preset (TG_FUZZ=ON,
# clang); scripts/fuzz.sh runs every build-fuzz/bin/*_fuzz briefly with seeds from
# tests/fuzz_corpus/<target>/.
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
# Everything that links the instrumented core (the truegreen binary too) needs the ASan/UBSan
# runtimes; the fuzz targets add libFuzzer's main on top.
get_property(_tg_fuzz_link GLOBAL PROPERTY TG_FUZZ_CORE_LINK_SANITIZERS)
if(NOT _tg_fuzz_link)
  target_link_options(truegreen_core INTERFACE -fsanitize=address,undefined)
  set_property(GLOBAL PROPERTY TG_FUZZ_CORE_LINK_SANITIZERS TRUE)
endif()
file(GLOB _tg_policy_fuzzers CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/policy/*_fuzz.cc)
foreach(src IN LISTS _tg_policy_fuzzers)
  get_filename_component(_name ${src} NAME_WE)
  add_executable(${_name} ${src})
  target_compile_options(${_name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(${_name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(${_name} PRIVATE truegreen_core)
endforeach()
