#pragma once
// The protocol's messages that every peer speaks, actor and node alike: a refusal of its
// Hello, the heartbeat, the driver's request to say Hello again, and the end of the experiment.
#include <cstdint>
#include <string>

namespace packtune::protocol {

// driver -> actor or node: refused (for example another protocol version); the peer exits.
struct Reject {
  std::string reason;

  template <class Archive>
  void serialize(Archive& ar) { ar(reason); }
};

// Both ways, when nothing else was sent for a while.
struct Heartbeat {
  template <class Archive>
  void serialize(Archive&) {}
};

// driver -> actor: the driver retired this actor (it was silent too long: a partition) and
// gave its jobs to others; it drops its pack and says Hello again, to get new work.
// driver -> actor or node: a driver resumed with --resume hears from a peer that joined the
// driver before it; the peer says Hello (an actor, dropping its pack) or NodeHello again.
struct Rejoin {
  std::string reason;

  template <class Archive>
  void serialize(Archive& ar) { ar(reason); }
};

// driver -> actor or node: the experiment is over; exit.
struct Shutdown {
  template <class Archive>
  void serialize(Archive&) {}
};

}  // namespace packtune::protocol
