// A peer whose connection the driver refuses in the handshake (ZAP's 400, as the connection cap
// answers; libzmq 4.3.4 then never reconnects by itself) connects again on its own.
#include "protocol/redial.hpp"

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "protocol/zmq_channel.hpp"

namespace proto = packtune::protocol;

namespace {

// A driver's context with a ZAP handler that refuses the next `refuse` handshakes.
class Gate {
 public:
  Gate() : zap_(context, zmq::socket_type::rep) {
    zap_.set(zmq::sockopt::linger, 0);
    zap_.bind("inproc://zeromq.zap.01");
    thread_ = std::thread([this] { serve(); });
  }
  ~Gate() {
    stop_ = true;
    thread_.join();
  }

  // A router that asks the handler, on `endpoint` (a port given as * is chosen).
  zmq::socket_t listen(const std::string& endpoint) {
    zmq::socket_t router(context, zmq::socket_type::router);
    router.set(zmq::sockopt::linger, 0);
    router.set(zmq::sockopt::zap_domain, "test");
    router.bind(endpoint);
    return router;
  }

  zmq::context_t context;
  std::atomic<int> refuse{0};
  std::atomic<int> requests{0};

 private:
  void serve() {
    while (!stop_) {
      zmq::pollitem_t item{zap_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(50));
      if ((item.revents & ZMQ_POLLIN) == 0) continue;
      std::vector<zmq::message_t> request;
      do {
        request.emplace_back();
        (void)zap_.recv(request.back());
      } while (request.back().more());
      ++requests;
      const bool refused = refuse.fetch_sub(1) > 0;
      if (!refused) refuse = 0;
      const std::array<std::string, 6> reply{"1.0", request[1].to_string(), refused ? "400" : "200", "", "", ""};
      for (std::size_t i = 0; i < reply.size(); ++i) {
        zap_.send(zmq::buffer(reply[i]), i + 1 < reply.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
      }
    }
  }

  zmq::socket_t zap_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

zmq::socket_t peer(zmq::context_t& context, const std::string& endpoint) {
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect(endpoint);
  return dealer;
}

}  // namespace

TEST_CASE("a peer refused in its handshake connects again, less and less often, until it joins") {
  Gate gate;
  gate.refuse = 3;
  auto router = gate.listen("tcp://127.0.0.1:*");
  const auto endpoint = router.get(zmq::sockopt::last_endpoint);
  std::atomic<int> answered{0};
  std::atomic<bool> joined{false};
  std::thread driver([&] {
    // Every Hello is answered: none comes over a refused connection.
    while (!joined) {
      if (auto routed = packtune::RouterInbox().receive(router, 100)) {
        proto::Welcome welcome;
        welcome.actor_id = 7;
        // Counted before it goes: the peer checks the count as soon as the Welcome arrives.
        ++answered;
        packtune::send_message(router, routed->identity, welcome);
      }
    }
  });
  struct Join {
    std::atomic<bool>& joined;
    std::thread& driver;
    ~Join() {
      joined = true;
      driver.join();
    }
  } join{joined, driver};
  zmq::context_t peer_context;
  auto dealer = peer(peer_context, endpoint);
  const auto welcome =
      packtune::join_driver<proto::Welcome>(dealer, proto::Hello{}, endpoint, 60, "actor");
  CHECK(welcome.actor_id == 7);
  CHECK(answered > 0);
  // Three refusals, then the connection that joined; more where a dial that libzmq left with a
  // pipe to nowhere was dropped and made again (redial.hpp).
  CHECK(gate.requests >= 4);
}

TEST_CASE("a peer refused when it connects again after it joined sends without waiting for ever, and is heard again") {
  Gate gate;
  auto router = gate.listen("tcp://127.0.0.1:*");
  const auto endpoint = router.get(zmq::sockopt::last_endpoint);
  zmq::context_t peer_context;
  auto dealer = peer(peer_context, endpoint);
  packtune::send_message(dealer, proto::Heartbeat{});
  REQUIRE(packtune::RouterInbox().receive(router, 30'000));
  // The driver's side goes and comes back where it was, refusing the peer's next two handshakes.
  gate.refuse = 2;
  const int before = gate.requests;
  router.close();
  // libzmq closes the listener on its I/O thread, after close() returns.
  std::optional<zmq::socket_t> again;
  for (int tries = 0; !again && tries < 1000; ++tries) {
    try {
      again = gate.listen(endpoint);
    } catch (const zmq::error_t& e) {
      REQUIRE(e.num() == EADDRINUSE);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  REQUIRE(again);
  int sent = 0;
  std::optional<packtune::Routed> heard;
  while (!heard && sent < 100) {
    packtune::send_message(dealer, proto::Heartbeat{});  // returns, dropped while refused
    ++sent;
    heard = packtune::RouterInbox().receive(*again, 100);
  }
  REQUIRE(heard);
  CHECK(std::holds_alternative<proto::Heartbeat>(heard->message));
  // Two refused and the one heard, at least: a connection to the closing listener may have
  // been asked about too.
  CHECK(gate.requests - before >= 3);
}
