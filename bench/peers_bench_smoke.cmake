# peers_bench --smoke --json must exit 0 and print one JSON object in which every way ran the
# sweep's trials and reported a wall time, a best val_accuracy and a test accuracy. Figures
# are not judged. Without the peers' venv (scripts/setup-peers.sh) the test is skipped: cmake
# -P cannot exit with a code of its own before CMake 3.29, so it prints the line that the
# test's SKIP_REGULAR_EXPRESSION matches.
# -DOWN_SAMPLERS=ON: --own-samplers --ways packtune,optuna instead (packtune's sampler tpe against
# Optuna's TPESampler over --own-samplers' default sweeps), and the JSON must say so.
set(python "$ENV{PACKTUNE_PEERS_PYTHON}")
if(python STREQUAL "")
  set(python "$ENV{HOME}/.cache/packtune/peers-venv/bin/python")
endif()
execute_process(COMMAND ${python} -c "import torch, ray, optuna"
  RESULT_VARIABLE have_peers OUTPUT_QUIET ERROR_QUIET)
if(NOT have_peers EQUAL 0)
  message(STATUS "peers_bench_smoke: SKIPPED, no peers' venv at ${python} (run scripts/setup-peers.sh)")
  return()
endif()
set(ways packtune max_pack_1 ray_tune optuna)
set(args "")
if(OWN_SAMPLERS)
  set(ways packtune optuna)
  set(args --own-samplers --ways packtune,optuna)
endif()
execute_process(COMMAND ${PEERS_BENCH} --smoke --json --peers-python ${python} ${args}
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  # Ray Tune's HyperBandScheduler sometimes leaves every trial paused and waits forever ("No
  # trial is running and no new trial has been started"; seen once in about a dozen runs on 2026-11-25): a stall
  # of the peer, not of packtune, which --smoke's peer timeout turns into this error.
  if(err MATCHES "ray_tune gave no result within")
    message(STATUS "peers_bench_smoke: SKIPPED, Ray Tune stalled (its HyperBandScheduler left every trial paused):\n${err}")
    return()
  endif()
  message(FATAL_ERROR "peers_bench --smoke ${args} exited ${rc}:\n${err}")
endif()
string(JSON trials ERROR_VARIABLE json_error GET "${out}" schedule trials)
if(json_error)
  message(FATAL_ERROR "peers_bench --smoke did not print a JSON object with schedule.trials (${json_error}):\n${out}")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/smoke_checks.cmake)
require_positive_figures("${out}" WAYS ${ways} KEYS wall_seconds best_val_accuracy test_accuracy trials)
foreach(way ${ways})
  # Optuna's processes may start one trial more than the limit (MaxTrialsCallback is checked
  # as each trial ends), so at least the sweeps' trials.
  string(JSON done GET "${out}" ways ${way} trials)
  if(done LESS trials)
    message(FATAL_ERROR "way ${way} ran ${done} of ${trials} trials:\n${out}")
  endif()
endforeach()
list(REMOVE_ITEM ways packtune)
set(ratios "")
foreach(way ${ways})
  list(APPEND ratios ${way}/wall_over_packtune)
endforeach()
require_positive_ratios("${out}" ${ratios})
if(OWN_SAMPLERS)
  # More than one sweep, each way its own sampler, and the samplers named.
  string(JSON sweeps GET "${out}" schedule sweeps)
  string(JSON sweep GET "${out}" schedule sweep_trials)
  math(EXPR expected "${sweeps} * ${sweep}")
  if(sweeps LESS 2 OR NOT trials EQUAL expected)
    message(FATAL_ERROR "--own-samplers: expected 2 or more sweeps of ${sweep} trials, got ${sweeps} (${trials} trials):\n${out}")
  endif()
  string(JSON same GET "${out}" same_configs)
  string(JSON packtune_sampler GET "${out}" samplers packtune)
  string(JSON optuna_sampler GET "${out}" samplers optuna)
  if(same OR NOT packtune_sampler MATCHES "tpe" OR NOT optuna_sampler MATCHES "TPESampler")
    message(FATAL_ERROR "--own-samplers: expected packtune's tpe against Optuna's TPESampler, got "
                        "\"${packtune_sampler}\" and \"${optuna_sampler}\" (same configs: ${same}):\n${out}")
  endif()
endif()
