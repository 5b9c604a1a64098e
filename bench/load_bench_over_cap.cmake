# Twice as many simulated actors as the driver's connection cap (docs/security.md): the cap's
# worth are admitted and train every job to the end, none of them is cut (no Rejoin), and the
# rest are refused in the handshake throughout, counted by the driver and by the actors.
# Before the cap was decided in the handshake, 106-108 of 192 actors were welcomed against a
# cap of 96, 6-9 of them then cut.
# LOAD_BENCH: the binary; WORK: a fresh folder for the kept run.
file(REMOVE_RECURSE "${WORK}")
# ulimit -n 160 leaves max(64, 160 / 4) = 64 descriptors for the driver's own files: a cap of 96.
set(cap 96)
set(actors 192)
execute_process(COMMAND ${LOAD_BENCH} --quick --actors ${actors} --driver-open-files 160 --keep ${WORK}
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "load_bench over the cap exited ${rc}:\n${err}")
endif()
foreach(key joined_actors refused_actors ever_joined_actors trained_actors refused_connections rejoins jobs reports)
  string(JSON ${key} GET "${out}" ${key})
endforeach()
math(EXPR refused_expected "${actors} - ${cap}")
if(NOT joined_actors EQUAL cap OR NOT ever_joined_actors EQUAL cap OR NOT rejoins EQUAL 0)
  message(FATAL_ERROR "expected exactly ${cap} actors welcomed, and none cut afterwards:\n${out}")
endif()
if(NOT trained_actors EQUAL cap OR NOT reports GREATER 0 OR NOT reports EQUAL jobs)
  message(FATAL_ERROR "expected every admitted actor to train, and every job reported:\n${out}")
endif()
# load_bench starts the run once the driver refused one of them (not each: one cut before its
# handshake reconnects and may be cut again, docs/security.md).
if(NOT refused_actors EQUAL refused_expected OR NOT refused_connections GREATER 0)
  message(FATAL_ERROR "expected the other ${refused_expected} actors refused:\n${out}")
endif()
file(READ "${WORK}/driver.log" log)
if(NOT log MATCHES "refused [0-9]+ new connection\\(s\\): too many connections \\(at most ${cap} at once")
  message(FATAL_ERROR "the driver's log counts no refusal at the cap of ${cap}:\n${log}")
endif()
file(REMOVE_RECURSE "${WORK}")
