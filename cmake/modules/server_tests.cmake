# The server's integration tests start `truegreen serve` on the tiny SD pipelines and the runtime
# test models, so they build after both model sets.
if(TG_FUZZ)
  return()
endif()
file(GLOB _tg_server_tests CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/server_*_test.cc)
foreach(f IN LISTS _tg_server_tests)
  get_filename_component(_n ${f} NAME_WE)
  foreach(dep sd_tiny_models runtime_models)
    if(TARGET ${_n} AND TARGET ${dep})
      add_dependencies(${_n} ${dep})
    endif()
  endforeach()
endforeach()
