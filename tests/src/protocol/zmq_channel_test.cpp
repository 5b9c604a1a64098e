// The driver's router never waits for a peer: a send into a full pipe is refused whole.
#include "protocol/zmq_channel.hpp"

#include <string>

#include <catch2/catch.hpp>

namespace proto = packtune::protocol;

TEST_CASE("a router's send to a peer that stopped reading is refused whole, not left waiting") {
  zmq::context_t context(1);
  zmq::socket_t router(context, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  router.set(zmq::sockopt::router_mandatory, 1);
  router.set(zmq::sockopt::sndhwm, 8);
  router.bind("inproc://zmq-channel-test");
  zmq::socket_t peer(context, zmq::socket_type::dealer);
  peer.set(zmq::sockopt::linger, 0);
  peer.set(zmq::sockopt::rcvhwm, 8);
  peer.set(zmq::sockopt::routing_id, "peer");
  peer.connect("inproc://zmq-channel-test");
  packtune::send_message(peer, proto::Heartbeat{});
  REQUIRE(packtune::RouterInbox().receive(router, 1000));  // the router now knows the peer

  int sent = 0;
  bool refused = false;
  while (!refused && sent < 10000) {
    if (packtune::send_message(router, "peer", proto::Stop{sent})) {
      ++sent;
    } else {
      refused = true;
    }
  }
  CHECK(refused);
  CHECK(sent >= 8);
  // Every message that went is whole, in order; the refused one left nothing behind.
  for (int i = 0; i < sent; ++i) {
    auto m = packtune::receive_message(peer, 1000);
    REQUIRE(m);
    REQUIRE(std::get<proto::Stop>(*m).trial == i);
  }
  CHECK_FALSE(packtune::receive_message(peer, 0));
}
