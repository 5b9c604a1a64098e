#include "protocol/node_bundle.hpp"


#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

#include "protocol/protocol.hpp"
#include "protocol/wire_archive.hpp"
#include "protocol/wire_output.hpp"

namespace packtune::protocol {

template <class Archive>
void NodeBundle::load(Archive& ar) {
  for (auto* strings : {&routes, &messages}) {
    cereal::size_type count = 0;
    ar(cereal::make_size_tag(count));
    if (count > kMaxMessages) {
      throw cereal::Exception(std::to_string(count) + " messages, more than " + std::to_string(kMaxMessages));
    }
    strings->resize(static_cast<std::size_t>(count));
    for (auto& s : *strings) ar(s);
  }
}

std::string encode(const NodeBundle& bundle) { return encode_portable(bundle); }

NodeBundle decode_bundle(const void* data, std::size_t size) {
  NodeBundle bundle;
  read_whole<ProtocolError>(data, size, bundle, "bundle of messages", [](const NodeBundle& b) {
    if (b.routes.empty()) throw cereal::Exception("no messages");
    if (b.routes.size() != b.messages.size()) {
      throw cereal::Exception(std::to_string(b.routes.size()) + " routes for " + std::to_string(b.messages.size()) +
                              " messages");
    }
    for (const auto& route : b.routes) {
      if (route.empty()) throw cereal::Exception("an empty route");
    }
  });
  return bundle;
}

}  // namespace packtune::protocol
