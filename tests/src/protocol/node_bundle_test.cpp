// A node's bundle: several peers' messages in one frame, checked as strictly as one message.
#include "protocol/node_bundle.hpp"

#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <zmq.hpp>

#include "packtune/error.hpp"
#include "protocol/node_route.hpp"
#include "protocol/protocol.hpp"
#include "protocol/zmq_channel.hpp"

using namespace packtune;
using protocol::NodeBundle;
using protocol::NodeRoute;

namespace {

const std::string kFirst("\0\0\0\0\1", 5);
const std::string kSecond("\0\0\0\0\2", 5);

NodeBundle two_messages() {
  NodeBundle bundle;
  bundle.add(kFirst, protocol::encode(protocol::Stop{3}));
  bundle.add(kSecond, protocol::encode(protocol::Heartbeat{}));
  return bundle;
}

std::vector<Routed> decode_frames_of(const std::string& identity, const std::vector<std::string>& parts) {
  std::vector<zmq::message_t> frames;
  frames.emplace_back(identity);
  for (const auto& part : parts) frames.emplace_back(part);
  std::vector<Routed> out;
  decode_routed_frames(frames, frames.size(), out);
  return out;
}

}  // namespace

TEST_CASE("a bundle decodes to its messages in order, each under its route") {
  const auto bundle = protocol::decode_bundle(protocol::encode(two_messages()).data(), protocol::encode(two_messages()).size());
  REQUIRE(bundle.size() == 2);
  CHECK(bundle.routes == std::vector<std::string>{kFirst, kSecond});

  const auto node = NodeRoute::fresh_routing_id();
  const auto routed = decode_frames_of(node, {std::string(), protocol::encode(two_messages())});
  REQUIRE(routed.size() == 2);
  CHECK(routed[0].identity == NodeRoute::join(node, kFirst));
  CHECK(std::get<protocol::Stop>(routed[0].message).trial == 3);
  CHECK(routed[1].identity == NodeRoute::join(node, kSecond));
  CHECK(std::holds_alternative<protocol::Heartbeat>(routed[1].message));
}

TEST_CASE("a malformed bundle is refused whole, as a malformed message is") {
  const auto node = NodeRoute::fresh_routing_id();
  const auto good = protocol::encode(two_messages());
  CHECK_THROWS_AS(protocol::decode_bundle(good.data(), good.size() - 1), protocol::ProtocolError);
  CHECK_THROWS_AS(protocol::decode_bundle((good + "x").data(), good.size() + 1), protocol::ProtocolError);
  CHECK_THROWS_AS(protocol::decode_bundle(protocol::encode(NodeBundle{}).data(), protocol::encode(NodeBundle{}).size()),
                  protocol::ProtocolError);
  auto uneven = two_messages();
  uneven.messages.pop_back();
  CHECK_THROWS_WITH(protocol::decode_bundle(protocol::encode(uneven).data(), protocol::encode(uneven).size()),
                    Catch::Contains("2 routes for 1 messages"));
  auto unrouted = two_messages();
  unrouted.routes[1].clear();
  CHECK_THROWS_WITH(protocol::decode_bundle(protocol::encode(unrouted).data(), protocol::encode(unrouted).size()),
                    Catch::Contains("an empty route"));
  // A message inside that is not one of this protocol's.
  auto garbled = two_messages();
  garbled.messages[0] = "\x01\xff";
  CHECK_THROWS_AS(decode_frames_of(node, {std::string(), protocol::encode(garbled)}), Error);
  // A bundle never carries a payload frame.
  CHECK_THROWS_WITH(decode_frames_of(node, {std::string(), good, "payload"}), Catch::Contains("payload frame"));
  // A direct peer's empty frame is a message that is not one, not a bundle.
  CHECK_THROWS_AS(decode_frames_of(std::string("\0\x12\x34\x56\x78", 5), {std::string(), good}), Error);
}

TEST_CASE("a bundle keeps within its limits: a receiver refuses more messages, a sender starts another") {
  NodeBundle many;
  for (std::size_t i = 0; i <= NodeBundle::kMaxMessages; ++i) many.add(kFirst, protocol::encode(protocol::Heartbeat{}));
  const auto bytes = protocol::encode(many);
  CHECK_THROWS_WITH(protocol::decode_bundle(bytes.data(), bytes.size()), Catch::Contains("more than 1024"));
  many.routes.pop_back();
  many.messages.pop_back();
  CHECK(protocol::decode_bundle(protocol::encode(many).data(), protocol::encode(many).size()).size() == NodeBundle::kMaxMessages);
  CHECK_FALSE(many.has_room(1));

  NodeBundle big;
  CHECK(big.has_room(NodeBundle::kMaxBytes * 2));  // an empty bundle takes what would go alone
  big.add(kFirst, std::string(NodeBundle::kMaxBytes - 100, 'x'));
  CHECK(big.has_room(100 - kFirst.size()));
  CHECK_FALSE(big.has_room(101 - kFirst.size()));
  big.clear();
  CHECK(big.bytes == 0);
}
