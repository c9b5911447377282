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
# The NVML sampler's unit test loads the fake libnvidia-ml from build/fakegpu.
if(TARGET bench_unit_tests AND TARGET tg_fakegpu)
  add_dependencies(bench_unit_tests tg_fakegpu)
endif()
