# The bench stub server as its own process, for the `bench --ab` orchestration test
# (tests/bench_load_test.cc finds it next to the other binaries in build/bin).
if(TG_BUILD_TESTS AND NOT TG_FUZZ)
  add_executable(bench_stub_server ${CMAKE_SOURCE_DIR}/tests/bench_stub_server_main.cc)
  target_include_directories(bench_stub_server PRIVATE ${CMAKE_SOURCE_DIR})
  target_link_libraries(bench_stub_server PRIVATE Boost::headers Threads::Threads)
  if(TARGET bench_load_test)
    add_dependencies(bench_load_test bench_stub_server)
  endif()
endif()
# The NVML sampler's tests load the fake libnvidia-ml from <build>/fakegpu. That target is defined
# by integrity_fakegpu.cmake, included after this file, so the dependency is added at the end of
# the directory's configuration.
function(tg_bench_fakegpu_deps)
  if(TARGET tg_fakegpu)
    foreach(t bench_unit_tests bench_load_test)
      if(TARGET ${t})
        add_dependencies(${t} tg_fakegpu)
      endif()
    endforeach()
  endif()
endfunction()
cmake_language(DEFER CALL tg_bench_fakegpu_deps)
