#pragma once
// The driver's protocol with its peers: one struct per verb, serialised with cereal's portable
// binary archive inside a std::variant. A message on the wire is one ZeroMQ frame (after the
// ROUTER's identity frame). The handshake carries kProtocolVersion; a mismatch is refused.
// The messages live by peer: actor_messages.hpp, node_messages.hpp, transfer_messages.hpp,
// and session_messages.hpp for those every peer speaks.
#include <cstdint>
#include <string>
#include <variant>

#include "packtune/error.hpp"
#include "protocol/actor_messages.hpp"
#include "protocol/node_messages.hpp"
#include "protocol/protocol_version.hpp"
#include "protocol/session_messages.hpp"
#include "protocol/transfer_messages.hpp"

namespace packtune::protocol {

// New verbs go at the end: a verb's index is its tag on the wire.
using Message = std::variant<Hello, Welcome, Reject, Ready, Assign, Stop, Report, TrialFailed,
                             ActorFailed, Heartbeat, Shutdown, Measured, OutOfMemory, Profile, Profiled,
                             NodeHello, NodeWelcome, ActorExited, FetchChunk, Chunk, Offer, Stored, Rejoin, Checkpointed,
                             Test, Tested, KillActor>;

// Bytes from a peer that are not a message of this protocol version.
class ProtocolError : public Error {
 public:
  using Error::Error;
};

std::string encode(const Message& message);
// Throws ProtocolError for bytes that are not a message of this version: truncated, trailing
// bytes, an unknown verb, a length longer than the bytes left, a bool other than 0 or 1.
Message decode(const void* data, std::size_t size);

const char* verb(const Message& message);

// What a peer may declare. The driver's planner adds and multiplies these numbers: beyond the
// limits a message is refused, so that no sum of them overflows.
constexpr std::int32_t kMaxNodeActors = 4096;                   // as the config's "actors"
constexpr std::int64_t kMaxMemoryBytes = std::int64_t{1} << 50;  // 1 PiB: any machine's or device's
constexpr std::int32_t kMaxMeasuredMembers = 1 << 20;
// The largest checkpoint an Offer may declare: a trial's weights and optimizer state, far
// beyond any model an actor trains, and a bound on what one upload may write to the store.
constexpr std::uint64_t kMaxCheckpointBytes = std::uint64_t{64} << 30;

// Why the driver refuses a peer's message (another protocol version, a count or a size out of
// range), or "" to take it.
std::string refusal(const Hello& hello);
std::string refusal(const NodeHello& hello);
std::string refusal(const Ready& ready);
std::string refusal(const Measured& measured);

}  // namespace packtune::protocol
