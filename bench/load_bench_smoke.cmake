# load_bench --quick must exit 0 and print one JSON object with the figures it promises.
# Figures are not judged: the machine may be busy.
# LOAD_BENCH_ARGS: more options, a list (--sampler;tpe).
execute_process(COMMAND ${LOAD_BENCH} --quick ${LOAD_BENCH_ARGS}
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "load_bench --quick exited ${rc}:\n${err}")
endif()
string(JSON type ERROR_VARIABLE json_error TYPE "${out}")
if(json_error OR NOT type STREQUAL "OBJECT")
  message(FATAL_ERROR "load_bench --quick did not print a JSON object (${json_error}):\n${out}")
endif()
foreach(key messages_per_second driver_cpu_us_per_message driver_peak_rss_mb overhead actors trials time_scale
            wall_seconds minimum_seconds jobs idle_actor_seconds idle_share first_job_idle_actor_seconds)
  string(JSON value ERROR_VARIABLE key_error GET "${out}" ${key})
  if(key_error)
    message(FATAL_ERROR "no \"${key}\" in:\n${out}")
  endif()
endforeach()
foreach(key messages_per_second driver_peak_rss_mb wall_seconds minimum_seconds jobs)
  string(JSON value GET "${out}" ${key})
  if(NOT value GREATER 0)
    message(FATAL_ERROR "${key} is ${value}, expected a positive figure:\n${out}")
  endif()
endforeach()
# The actors' waits are a share of their time: at least 0 and below 1.
string(JSON idle GET "${out}" idle_actor_seconds)
string(JSON share GET "${out}" idle_share)
if(idle LESS 0 OR share LESS 0 OR NOT share LESS 1)
  message(FATAL_ERROR "idle figures out of range (all ${idle} actor-seconds, share ${share}):\n${out}")
endif()
# EXPECT_CONNECTIONS: with --nodes, the driver must have been reached over one connection per node.
if(DEFINED EXPECT_CONNECTIONS)
  string(JSON value GET "${out}" connections)
  if(NOT value EQUAL EXPECT_CONNECTIONS)
    message(FATAL_ERROR "connections is ${value}, expected ${EXPECT_CONNECTIONS}:\n${out}")
  endif()
endif()
