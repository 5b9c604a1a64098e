#include "packing/fuse_mode.hpp"

#include "packtune/error.hpp"

namespace packtune::packing {

FuseMode parse_fuse_mode(const std::string& text) {
  if (text == "never") return FuseMode::Never;
  if (text == "auto") return FuseMode::Auto;
  if (text == "always") return FuseMode::Always;
  throw InputError("fuse: unknown value \"" + text + "\"; expected auto, always or never");
}

}  // namespace packtune::packing
