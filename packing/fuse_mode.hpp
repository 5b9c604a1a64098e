#pragma once
// Whether the planner fuses trials of one shape into one model (HFTA), as the config's
// "fuse" word says it.
#include <string>

namespace packtune::packing {

// never: every trial its own plain model; auto: fuse while the throughput model says one
// more member pays; always: fuse what can fuse, as far as memory and max_members allow.
enum class FuseMode { Never, Auto, Always };
FuseMode parse_fuse_mode(const std::string& text);  // "never" | "auto" | "always"

}  // namespace packtune::packing
