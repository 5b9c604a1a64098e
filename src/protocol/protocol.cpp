#include "protocol/protocol.hpp"

#include <initializer_list>
#include <limits>

#include <cereal/archives/portable_binary.hpp>
#include <cereal/types/map.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/variant.hpp>
#include <cereal/types/vector.hpp>

#include "packtune/error.hpp"
#include "protocol/wire_archive.hpp"
#include "protocol/wire_output.hpp"

namespace packtune::protocol {

std::string encode(const Message& message) { return encode_portable(message); }

Message decode(const void* data, std::size_t size) {
  Message message;
  read_whole<ProtocolError>(data, size, message, "protocol message", [](const Message&) {});
  return message;
}

const char* verb(const Message& message) {
  static const char* names[] = {"Hello",  "Welcome",     "Reject",      "Ready",
                                "Assign", "Stop",        "Report",      "TrialFailed",
                                "ActorFailed", "Heartbeat", "Shutdown", "Measured",
                                "OutOfMemory", "Profile",   "Profiled",    "NodeHello",
                                "NodeWelcome", "ActorExited", "FetchChunk", "Chunk",
                                "Offer",       "Stored",      "Rejoin",      "Checkpointed",
                                "Test",        "Tested",      "KillActor"};
  static_assert(sizeof(names) / sizeof(names[0]) == std::variant_size_v<Message>, "a verb without a name");
  return names[message.index()];
}

namespace {

std::string version_refusal(std::uint32_t version) {
  if (version == kProtocolVersion) return "";
  return "protocol version " + std::to_string(version) + " is not this driver's " + std::to_string(kProtocolVersion) +
         "; run the same packtune build on both ends";
}

// "" when `value` is in [low, high], else why not.
std::string out_of_range(const char* what, std::int64_t value, std::int64_t low, std::int64_t high) {
  if (value >= low && value <= high) return "";
  return std::string(what) + " " + std::to_string(value) + " is out of range (" + std::to_string(low) + " to " +
         std::to_string(high) + ")";
}

std::string first_of(std::initializer_list<std::string> reasons) {
  for (const auto& r : reasons) {
    if (!r.empty()) return r;
  }
  return "";
}

}  // namespace

std::string refusal(const Hello& hello) {
  return first_of({version_refusal(hello.protocol_version),
                   out_of_range("local_index", hello.local_index, -1, kMaxNodeActors - 1),
                   out_of_range("node_id", hello.node_id, -1, std::numeric_limits<std::int32_t>::max()),
                   out_of_range("threads", hello.threads, 0, std::numeric_limits<std::int32_t>::max())});
}

std::string refusal(const NodeHello& hello) {
  auto why = first_of({version_refusal(hello.protocol_version), out_of_range("actors", hello.actors, 0, kMaxNodeActors),
                       out_of_range("devices", static_cast<std::int64_t>(hello.devices.size()), 0, kMaxNodeActors),
                       out_of_range("cores", hello.cores, 0, std::numeric_limits<std::int32_t>::max()),
                       out_of_range("memory_bytes", hello.memory_bytes, 0, kMaxMemoryBytes),
                       out_of_range("node_id", hello.node_id, -1, std::numeric_limits<std::int32_t>::max() - 1)});
  for (const auto& device : hello.devices) {
    if (why.empty()) why = out_of_range("a device's memory_bytes", device.memory_bytes, 0, kMaxMemoryBytes);
  }
  return why;
}

std::string refusal(const Ready& ready) {
  // The context keys the driver's profile cache, a file on its disk: a few hundred bytes each.
  constexpr std::int64_t kMaxContext = 1024;
  auto length = [](const std::string& s) { return static_cast<std::int64_t>(s.size()); };
  return first_of({out_of_range("capacity_bytes", ready.capacity_bytes, 0, kMaxMemoryBytes),
                   out_of_range("base_bytes", ready.base_bytes, 0, kMaxMemoryBytes),
                   out_of_range("device_model's length", length(ready.device_model), 0, kMaxContext),
                   out_of_range("build's length", length(ready.build), 0, kMaxContext),
                   out_of_range("data_context's length", length(ready.data_context), 0, kMaxContext)});
}

std::string refusal(const Measured& measured) {
  return first_of({out_of_range("members", measured.members, 1, kMaxMeasuredMembers),
                   out_of_range("peak_bytes", measured.peak_bytes, 0, kMaxMemoryBytes)});
}

}  // namespace packtune::protocol
