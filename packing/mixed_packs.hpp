#pragma once
// Whether an actor trains several units side by side, as the config's "mixed_packs" word
// says it, and what that makes an actor's unit cap (ActorSpec::max_units).
#include <string>

namespace packtune::packing {

// Whether an actor trains several units at once (a mixed pack: trials that do not fuse,
// each a model of its own, on the pack's one data stream). On a GPU each unit steps on a
// CUDA stream of its own, so small units overlap and fill the device. On a CPU they step
// one after another on the same cores: a second unit adds no throughput and only delays the
// first one's results (measured: docs/planner.md, Mixed packs), so `auto` gives CPU actors
// one unit at a time, and the trials beyond it wait in the driver's queue.
enum class MixedPacks { Auto, Always, Never };
MixedPacks parse_mixed_packs(const std::string& text);  // "auto" | "always" | "never"
// max_units for an actor on `device` ("cpu", "cuda:0", ...).
int units_per_actor(MixedPacks mode, const std::string& device);

}  // namespace packtune::packing
