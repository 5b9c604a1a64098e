#include "protocol/protocol.hpp"

#include <sstream>

#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/variant.hpp>
#include <cereal/types/vector.hpp>

#include "packtune/error.hpp"

namespace packtune::protocol {

std::string encode(const Message& message) {
  std::ostringstream out(std::ios::binary);
  {
    cereal::PortableBinaryOutputArchive archive(out);
    archive(message);
  }
  return out.str();
}

Message decode(const void* data, std::size_t size) {
  std::istringstream in(std::string(static_cast<const char*>(data), size), std::ios::binary);
  Message message;
  try {
    cereal::PortableBinaryInputArchive archive(in);
    archive(message);
  } catch (const std::exception& e) {
    throw Error(std::string("malformed protocol message (") + e.what() +
                "); is the peer a packtune of the same version?");
  }
  if (in.peek() != std::char_traits<char>::eof()) {
    throw Error("malformed protocol message (trailing bytes); is the peer a packtune of the same version?");
  }
  return message;
}

const char* verb(const Message& message) {
  static const char* names[] = {"Hello",  "Welcome",     "Reject",      "Ready",
                                "Assign", "Stop",        "Report",      "TrialFailed",
                                "ActorFailed", "Heartbeat", "Shutdown", "Measured",
                                "OutOfMemory", "Profile",   "Profiled",    "NodeHello",
                                "NodeWelcome", "ActorExited", "FetchChunk", "Chunk",
                                "Offer",       "Stored",      "Rejoin",      "Checkpointed"};
  static_assert(sizeof(names) / sizeof(names[0]) == std::variant_size_v<Message>, "a verb without a name");
  return names[message.index()];
}

}  // namespace packtune::protocol
