#include <catch2/catch.hpp>

#include <variant>

#include "actor_process/keepalive.hpp"
#include "protocol/zmq_channel.hpp"

using namespace packtune;

namespace {

// The next message the router receives (failing the test after a minute without one: a bound
// on a hang, not a timing the test depends on).
protocol::Message next(zmq::socket_t& router) {
  auto routed = RouterInbox().receive(router, 60'000);
  REQUIRE(routed);
  return routed->message;
}

}  // namespace

TEST_CASE("Keepalive sends heartbeats while the actor is busy, and hands the socket back when stopped") {
  zmq::context_t context(1);
  zmq::socket_t driver(context, zmq::socket_type::router);
  driver.bind("inproc://keepalive-test");
  zmq::socket_t actor(context, zmq::socket_type::dealer);
  actor.connect("inproc://keepalive-test");

  {
    actor_process::Keepalive keepalive(actor, 0.01);
    // The test thread stands for the busy actor: it never touches `actor` meanwhile.
    for (int i = 0; i < 3; ++i) CHECK(std::holds_alternative<protocol::Heartbeat>(next(driver)));
    keepalive.stop();
    keepalive.stop();  // idempotent, as the destructor calls it again
  }
  // Stopped, the thread has joined: the actor's own messages go out on the socket again, after
  // whatever heartbeats were sent before the stop.
  send_message(actor, protocol::Profiled{"shape", "cpu", {1}, {0.01}, ""});
  for (;;) {
    const auto message = next(driver);
    if (std::holds_alternative<protocol::Heartbeat>(message)) continue;
    REQUIRE(std::holds_alternative<protocol::Profiled>(message));
    CHECK(std::get<protocol::Profiled>(message).key == "shape");
    break;
  }
}
