#include "protocol/peer_text.hpp"

#include <type_traits>

#include "util/printable.hpp"

namespace packtune::protocol {
namespace {

void cut(std::string& text, std::size_t max_chars) {
  // Most strings are short and printable already: no copy for them.
  bool clean = text.size() <= max_chars;
  for (std::size_t i = 0; clean && i < text.size(); ++i) clean = text[i] >= 0x20 && text[i] < 0x7f;
  if (!clean) text = util::printable(text, max_chars);
}

}  // namespace

void make_printable(Message& message) {
  std::visit(
      [](auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, Hello>) {
          cut(m.host, kMaxPeerName);
        } else if constexpr (std::is_same_v<T, NodeHello>) {
          cut(m.host, kMaxPeerName);
          for (auto& device : m.devices) cut(device.name, kMaxPeerName);
        } else if constexpr (std::is_same_v<T, Ready>) {
          cut(m.device, kMaxPeerName);
          // Bounded by refusal(Ready) already; a profile cache key must stay exactly as sent.
          for (auto* s : {&m.device_model, &m.build, &m.data_context}) {
            if (s->size() <= 1024) cut(*s, s->size());
          }
        } else if constexpr (std::is_same_v<T, Profiled>) {
          cut(m.device, kMaxPeerName);
          cut(m.error, kMaxPeerText);
        } else if constexpr (std::is_same_v<T, Report>) {
          cut(m.checkpoint_error, kMaxPeerText);
        } else if constexpr (std::is_same_v<T, TrialFailed> || std::is_same_v<T, ActorFailed> ||
                             std::is_same_v<T, OutOfMemory>) {
          cut(m.message, kMaxPeerText);
        } else if constexpr (std::is_same_v<T, ActorExited>) {
          cut(m.how, kMaxPeerText);
        } else if constexpr (std::is_same_v<T, Chunk> || std::is_same_v<T, Tested>) {
          cut(m.error, kMaxPeerText);
        }
      },
      message);
}

}  // namespace packtune::protocol
