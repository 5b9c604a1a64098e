# Twice as many simulated actors as the driver's connection cap (docs/security.md): the run
# must end, every job reported by the actors the cap took, while the rest are refused and the
# driver counts the refusals in its log. Before the driver took a peer's Hello only over a
# connection the cap holds, and peers said Hello again, such a crowd never started.
# LOAD_BENCH: the binary; WORK: a fresh folder for the kept run.
file(REMOVE_RECURSE "${WORK}")
# ulimit -n 160 leaves max(64, 160 / 4) = 64 descriptors for the driver's own files: a cap of 96.
set(cap 96)
execute_process(COMMAND ${LOAD_BENCH} --quick --actors 192 --driver-open-files 160 --keep ${WORK}
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "load_bench over the cap exited ${rc}:\n${err}")
endif()
string(JSON joined GET "${out}" joined_actors)
string(JSON refused GET "${out}" refused_actors)
string(JSON jobs GET "${out}" jobs)
string(JSON reports GET "${out}" reports)
# Every job the driver gave was reported: the run ended with the actors that joined.
if(joined LESS 1 OR NOT refused GREATER 0 OR NOT reports GREATER 0 OR NOT reports EQUAL jobs)
  message(FATAL_ERROR "expected some actors joined and some refused, and every job reported:\n${out}")
endif()
file(READ "${WORK}/driver.log" log)
if(NOT log MATCHES "refused [0-9]+ new connection\\(s\\): too many connections \\(at most ${cap} at once")
  message(FATAL_ERROR "the driver's log counts no refusal at the cap of ${cap}:\n${log}")
endif()
file(REMOVE_RECURSE "${WORK}")
