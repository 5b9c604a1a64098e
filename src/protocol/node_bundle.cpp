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
  try {
    WireInputArchive archive(data, size);
    archive(bundle);
    if (archive.remaining() != 0) throw cereal::Exception("trailing bytes");
    if (bundle.routes.empty()) throw cereal::Exception("no messages");
    if (bundle.routes.size() != bundle.messages.size()) {
      throw cereal::Exception(std::to_string(bundle.routes.size()) + " routes for " +
                              std::to_string(bundle.messages.size()) + " messages");
    }
    for (const auto& route : bundle.routes) {
      if (route.empty()) throw cereal::Exception("an empty route");
    }
  } catch (const std::exception& e) {
    throw ProtocolError(std::string("malformed bundle of messages (") + e.what() +
                        "); is the peer a packtune of the same version?");
  }
  return bundle;
}

}  // namespace packtune::protocol
