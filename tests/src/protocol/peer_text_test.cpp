#include <catch2/catch.hpp>

#include "protocol/peer_text.hpp"

using namespace packtune;
namespace proto = packtune::protocol;

namespace {

template <class T>
T printable(T message) {
  proto::Message m = std::move(message);
  proto::make_printable(m);
  return std::get<T>(m);
}

const std::string forged = "evil\n[12:00:00] info FORGED\x1b[2J\x07" + std::string(100'000, 'A');

bool clean(const std::string& s) {
  for (char c : s) {
    if (c < 0x20 || c >= 0x7f) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("a peer's names and errors arrive printable and bounded") {
  proto::Hello hello;
  hello.host = forged;
  const auto host = printable(hello).host;
  CHECK(clean(host));
  CHECK(host.size() == proto::kMaxPeerName + 3);
  CHECK(host.rfind("evil?[12:00:00] info FORGED?[2J?A", 0) == 0);

  proto::NodeHello node;
  node.host = forged;
  node.devices = {{forged, 1}};
  const auto n = printable(node);
  CHECK((clean(n.host) && clean(n.devices.at(0).name)));
  CHECK(n.devices.at(0).name.size() == proto::kMaxPeerName + 3);

  const auto failed = printable(proto::TrialFailed{3, forged, 9});
  CHECK(clean(failed.message));
  CHECK(failed.message.size() == proto::kMaxPeerText + 3);
  CHECK(failed.lease == 9);
  CHECK(clean(printable(proto::ActorFailed{forged}).message));
  CHECK(clean(printable(proto::ActorExited{0, 1, forged, true, false}).how));
}

TEST_CASE("what the driver matches exactly is left as it came, and clean text is not touched") {
  proto::Report report;
  report.metrics = {{"val\naccuracy", 0.5}};
  report.checkpoint = "trial-1-budget-1\n.h5";
  report.checkpoint_error = "disk\nfull";
  const auto r = printable(report);
  CHECK(r.metrics.count("val\naccuracy") == 1);  // refused by admission, and printed cleaned then
  CHECK(r.checkpoint == "trial-1-budget-1\n.h5");
  CHECK(r.checkpoint_error == "disk?full");
  const auto offer = printable(proto::Offer{1, "a\nb", 10, "tok\n"});
  CHECK(offer.name == "a\nb");
  CHECK(offer.token == "tok\n");

  proto::Ready ready{"cuda:0", 1, false, 0};
  ready.build = std::string(1024, 'b');
  ready.device_model = "NVIDIA H200";
  const auto kept = printable(ready);
  CHECK(kept.build == ready.build);
  CHECK(kept.device_model == "NVIDIA H200");
  proto::Hello plain;
  plain.host = "node-17.cluster";
  CHECK(printable(plain).host == "node-17.cluster");
}
