# Included from src/CMakeLists.txt: adds the brackets and simulate subcommands to the CLI
# target. They need packtune_tuners, nlohmann_json and Boost.ProgramOptions.
target_sources(packtune_cli PRIVATE ${CMAKE_CURRENT_LIST_DIR}/tuning_commands.cpp)
