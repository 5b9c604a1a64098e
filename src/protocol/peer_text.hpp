#pragma once
// What the driver keeps of a peer's free text. Peers name their host and devices and say why
// something failed; that text reaches the console, driver.log, the status line and error
// messages. Cut to printable ASCII and a bounded length as it arrives, no peer can forge a log
// line (a newline, a terminal escape) or write one of 100 KB (docs/security.md).
#include <cstddef>

#include "protocol/protocol.hpp"

namespace packtune::protocol {

constexpr std::size_t kMaxPeerName = 160;   // host and device names
constexpr std::size_t kMaxPeerText = 1000;  // errors, an exit's cause

// Replaces the free text of `message` (names, errors) by its printable, bounded form. Strings
// the driver matches exactly (checkpoint and metric names, tokens, shape keys) are left as
// they came: what does not match is refused, and printed through util::printable then.
void make_printable(Message& message);

}  // namespace packtune::protocol
