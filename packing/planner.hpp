#pragma once
// Online placement of one trial at a time onto the actors that are already running: the
// driver asks where the next trial goes whenever the tuner hands it one.
#include <cstdint>
#include <optional>
#include <vector>

namespace packtune::packing {

struct ActorLoad {
  int actor = -1;
  int members = 0;
  int max_members = 1;
  std::int64_t capacity_bytes = 0;  // 0: unknown, only the member cap applies
  std::int64_t used_bytes = 0;
};

// The actor the trial goes to: one with a free member slot and room for `bytes`, the least
// loaded first (FLEET's greedy balance: fewest members, then most free memory), ties to
// the lower id. nullopt when no actor has room now.
std::optional<int> place_trial(const std::vector<ActorLoad>& actors, std::int64_t bytes);

// True when the trial could fit on at least one of these actors once it is empty.
bool fits_anywhere(const std::vector<ActorLoad>& actors, std::int64_t bytes);

}  // namespace packtune::packing
