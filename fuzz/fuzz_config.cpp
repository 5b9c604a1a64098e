// A config file's text (JSON) into an ExperimentConfig, then everything `packtune run` checks
// before a process starts (validate: the tuner and its settings, every hyper-parameter the
// search space can produce, the device syntax, the data files). Any text must give a config
// or a packtune::Error (the CLI's one line and exit code 2); no other exception may escape.
#include <cstddef>
#include <cstdint>
#include <string>

#include "experiment/experiment_config.hpp"
#include "packtune/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    auto config = packtune::parse_config_text(text, "fuzz.json");
    packtune::validate(config);
    (void)packtune::tuner_context(config);
  } catch (const packtune::Error&) {
  }
  return 0;
}
