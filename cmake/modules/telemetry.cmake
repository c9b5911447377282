# tests/telemetry_optout_test.cc runs `run` on a generated runtime model and `bench --ab` with the
# bench stub server as the servers it starts: build both first.
if(TARGET telemetry_optout_test)
  foreach(dep runtime_models bench_stub_server)
    if(TARGET ${dep})
      add_dependencies(telemetry_optout_test ${dep})
    endif()
  endforeach()
endif()
