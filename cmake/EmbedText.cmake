# Turns a text file into a C++ source defining `packtune::report::NAME()`, a string_view of the
# file's bytes, so `packtune report` needs no file at run time (the report opens offline and
# the binary can be copied alone). A raw string literal: GCC compiles an 8.6 MB one in a third
# of a second, where a byte array takes minutes.
#
#   cmake -DINPUT=FILE -DOUTPUT=FILE.cpp -DNAME=plotly_js -P EmbedText.cmake
set(delimiter "packtune_embed")
file(READ "${INPUT}" text)
string(FIND "${text}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} holds the raw string's closing sequence; change the delimiter in ${CMAKE_CURRENT_LIST_FILE}")
endif()
# A literal's size includes its terminating NUL; sizeof then gives the length without strlen
# over megabytes at run time or in a constant expression.
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by cmake/EmbedText.cmake; do not edit.\n"
  "#include <cstddef>\n#include <string_view>\n"
  "namespace packtune::report {\nnamespace {\nconst char kText[] = R\"${delimiter}(")
file(APPEND "${OUTPUT}.tmp" "${text}")
file(APPEND "${OUTPUT}.tmp"
  ")${delimiter}\";\n}  // namespace\n"
  "std::string_view ${NAME}() { return {kText, sizeof(kText) - 1}; }\n"
  "}  // namespace packtune::report\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
