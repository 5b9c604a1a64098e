#pragma once
// The actors `packtune plan --actors SPEC` plans for, as written: a comma-separated list of
// groups, each `[COUNTx]DEVICE=SIZE`, `COUNTxSIZE`, `COUNTxDEVICE` or `COUNT`. A device
// always starts with a letter and a size with a digit, so `1000xcuda=16GiB` (1,000 GPUs of
// 16 GiB) and `1000x16GiB` (1,000 actors of the config's device) never read alike. Pure
// text: the plan fills in what a group leaves out from the config (planner_setup.hpp).
#include <cstdint>
#include <string>
#include <vector>

namespace packtune {

struct ActorGroup {
  std::int64_t count = 1;
  std::string device;              // empty: the config's device
  std::int64_t capacity_bytes = 0; // 0: not given, the default share
};

// More would only exhaust memory: the planner keeps a record per actor.
constexpr std::int64_t kMaxPlannedActors = 1000000;

// Throws InputError naming the group and the grammar; the groups' counts add up to at most
// kMaxPlannedActors.
std::vector<ActorGroup> parse_actor_groups(const std::string& text);

}  // namespace packtune
