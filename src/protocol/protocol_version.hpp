#pragma once
// The protocol's version, which every Hello and NodeHello carries: a peer of another version
// is refused (protocol.hpp). Raise it with any change to a message's fields or the verbs.
#include <cstdint>

namespace packtune::protocol {

// 13: Ready.device_model, build and data_context (the key of the throughput profile cache);
//     ExperimentSpec.deterministic and precision.
// 14: KillActor (driver -> node: a hung actor); ExperimentSpec.max_budget.
// 15: Assign, Profile and Test carry the trial's parsed spec (spec::TrialSpec).
// 16: NodeWelcome.actor_timeout_seconds (a node's relay answers its actors' heartbeats).
// 17: a node's connection carries bundles of its peers' messages (protocol/node_bundle.hpp).
// 18: Profiled.cut_short (a profile that ended where memory did).
constexpr std::uint32_t kProtocolVersion = 18;

}  // namespace packtune::protocol
