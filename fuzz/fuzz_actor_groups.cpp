// `packtune plan --actors SPEC` (experiment/actor_groups.hpp): any text gives groups that
// keep the grammar's promises or an InputError, the CLI's one line and exit code 2. The
// groups are checked, not expanded into actors: a million of them per input would only
// slow the fuzzer down.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "experiment/actor_groups.hpp"
#include "packtune/error.hpp"
#include "spec/device_syntax.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    std::int64_t total = 0;
    for (const auto& g : packtune::parse_actor_groups(text)) {
      if (g.count < 1 || g.capacity_bytes < 0) std::abort();
      if (!g.device.empty()) packtune::spec::check_device_syntax(g.device);  // must not throw
      total += g.count;
    }
    if (total > packtune::kMaxPlannedActors) std::abort();
  } catch (const packtune::InputError& e) {
    if (std::string(e.what()).find('\n') != std::string::npos) std::abort();  // one line
  }
  return 0;
}
