#include "packing/mixed_packs.hpp"

#include "packing/throughput_model.hpp"
#include "packtune/error.hpp"

namespace packtune::packing {

MixedPacks parse_mixed_packs(const std::string& text) {
  if (text == "auto") return MixedPacks::Auto;
  if (text == "always") return MixedPacks::Always;
  if (text == "never") return MixedPacks::Never;
  throw InputError("mixed_packs: unknown value \"" + text + "\"; expected auto, always or never");
}

int units_per_actor(MixedPacks mode, const std::string& device) {
  constexpr int kUnlimited = 1 << 30;
  switch (mode) {
    case MixedPacks::Always: return kUnlimited;
    case MixedPacks::Never: return 1;
    case MixedPacks::Auto: break;
  }
  return device_class(device) == "cpu" ? 1 : kUnlimited;
}

}  // namespace packtune::packing
