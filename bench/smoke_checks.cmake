# What the benchmarks' smoke tests (cmake -P scripts) check of the JSON a benchmark printed:
# that every way ran and gave positive figures. Figures are not judged.

# Each of WAYS has each of KEYS under "ways", a figure above 0.
function(require_positive_figures json)
  cmake_parse_arguments(arg "" "" "WAYS;KEYS" ${ARGN})
  foreach(way ${arg_WAYS})
    foreach(key ${arg_KEYS})
      string(JSON value ERROR_VARIABLE key_error GET "${json}" ways ${way} ${key})
      if(key_error)
        message(FATAL_ERROR "way ${way} has no \"${key}\":\n${json}")
      endif()
      if(NOT value GREATER 0)
        message(FATAL_ERROR "way ${way}: ${key} is ${value}, expected a positive figure:\n${json}")
      endif()
    endforeach()
  endforeach()
endfunction()

# Each ratio named (a path under "ratios", its parts joined by "/": max_pack_1/wall_over_packtune)
# is a figure above 0.
function(require_positive_ratios json)
  foreach(ratio ${ARGN})
    string(REPLACE "/" ";" path "${ratio}")
    string(JSON value GET "${json}" ratios ${path})
    if(NOT value GREATER 0)
      message(FATAL_ERROR "ratio ${ratio} is ${value}, expected a positive figure:\n${json}")
    endif()
  endforeach()
endfunction()
