// A hostile peer for the admission test (admission_test.sh): it speaks the driver's wire
// protocol through src/protocol and tries what a local process could. As a stranger (never
// said Hello): an offer, a fetch and a report, to which the driver must answer nothing but
// Rejoin. As a registered actor: an offer for a trial it does not hold, an upload that streams
// past its declared size, a fetch of a file it was not given, a Hello again while it holds a
// job, and a report whose metric names would overwrite results.jsonl's fields. It trains the
// remaining jobs honestly (val_accuracy 0.25), so that the run ends; it exits 0 when the driver
// answered each attempt as it must, else 1 with what went wrong.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

#include <zmq.hpp>

#include "protocol/protocol.hpp"
#include "protocol/zmq_channel.hpp"

namespace proto = packtune::protocol;
using packtune::Received;

namespace {

// Each wait only bounds a hang; a driver that answers never comes near it.
constexpr long kWaitMs = 120'000;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "hostile_peer: FAILED: %s\n", what.c_str());
  std::exit(1);
}

void say(const std::string& what) { std::printf("hostile_peer: %s\n", what.c_str()); std::fflush(stdout); }

zmq::socket_t dealer(zmq::context_t& context, const std::string& endpoint) {
  zmq::socket_t s(context, zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, 0);
  s.connect(endpoint);
  return s;
}

Received next(zmq::socket_t& s, const char* waiting_for) {
  auto r = packtune::receive_with_payload(s, kWaitMs);
  if (!r) fail(std::string("no message from the driver while waiting for ") + waiting_for);
  return std::move(*r);
}

// The next message of type T on `s`, skipping heartbeats.
template <class T>
T expect(zmq::socket_t& s, const char* waiting_for) {
  while (true) {
    auto r = next(s, waiting_for);
    if (std::holds_alternative<proto::Heartbeat>(r.message)) continue;
    if (auto* m = std::get_if<T>(&r.message)) return *m;
    fail(std::string("expected ") + waiting_for + ", got " + proto::verb(r.message));
  }
}

std::string name_of(long long trial, const char* budget) {
  return "trial-" + std::to_string(trial) + "-budget-" + budget + ".h5";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: hostile_peer ENDPOINT\n");
    return 2;
  }
  const std::string endpoint = argv[1];
  zmq::context_t context(1);

  // --- log injection and a flood of garbage -------------------------------------------------
  // A Hello and a NodeHello whose host would forge a log line, clear the screen, ring the bell
  // and make a line of 100 KB; then 20,000 frames that are no message. admission_test.sh reads
  // the driver's log for them.
  {
    const std::string forged = "evil\n[12:00:00] info FORGED line\x1b[2J\x07" + std::string(100'000, 'A');
    auto liar = dealer(context, endpoint);
    proto::Hello h;
    h.host = forged;
    packtune::send_message(liar, h);
    expect<proto::Welcome>(liar, "Welcome for a Hello with a forged host");
    auto node = dealer(context, endpoint);
    proto::NodeHello n;
    n.host = forged;
    packtune::send_message(node, n);
    expect<proto::NodeWelcome>(node, "NodeWelcome for a NodeHello with a forged host");
    auto flood = dealer(context, endpoint);
    for (int i = 0; i < 20'000; ++i) {
      const std::string garbage = "\xff\xfe garbage " + std::to_string(i) + "\n[12:00:00] info FORGED";
      flood.send(zmq::buffer(garbage), zmq::send_flags::none);
    }
    // The flood is queued in order before this: its answer means the driver read them all.
    packtune::send_message(flood, proto::Heartbeat{});
    expect<proto::Rejoin>(flood, "Rejoin after the flood");
    say("liar: forged host names and 20000 garbage frames sent");
  }

  // --- a stranger -------------------------------------------------------------------------
  {
    auto stranger = dealer(context, endpoint);
    packtune::send_message(stranger, proto::Offer{1, "trial-0-budget-0.5.h5", 10, ""});
    packtune::send_message(stranger, proto::FetchChunk{2, "trial-0-budget-0.5.h5", 0, 1 << 20, ""});
    proto::Report fake;
    fake.trial = 0;
    fake.budget = 0.5;
    fake.final = true;
    fake.lease = 1;
    fake.metrics = {{"val_accuracy", 1.0}};
    packtune::send_message(stranger, fake);
    packtune::send_message(stranger, proto::Heartbeat{});
    // The driver answers a connection's messages in order: a Stored or a Chunk would come first.
    expect<proto::Rejoin>(stranger, "Rejoin, the stranger's only answer");
    say("stranger: offer, fetch and report got no answer but Rejoin");
  }

  // --- a registered actor -----------------------------------------------------------------
  auto actor = dealer(context, endpoint);
  auto transfer = dealer(context, endpoint);
  auto hello = [&] {
    proto::Hello h;
    h.host = "hostile";
    h.pid = ::getpid();
    packtune::send_message(actor, h);
    const auto welcome = expect<proto::Welcome>(actor, "Welcome");
    packtune::send_message(actor, proto::Ready{"cpu", std::int64_t{1} << 32, false, 0});
    return welcome;
  };
  auto welcome = hello();
  int assigns = 0;
  bool injected = false;
  while (true) {
    auto r = next(actor, "an Assign or Shutdown");
    if (std::holds_alternative<proto::Shutdown>(r.message)) break;
    const auto* assign = std::get_if<proto::Assign>(&r.message);
    if (!assign) continue;  // Heartbeat, Profile, Stop
    const auto& token = welcome.transfer_token;
    if (++assigns == 1) {
      // Another trial's checkpoint: refused, and told so.
      packtune::send_message(transfer, proto::Offer{10, name_of(assign->trial + 1, "0.5"), 100, token});
      auto stored = expect<proto::Stored>(transfer, "Stored refusing an offer for another trial");
      if (stored.transfer != 10 || stored.error.empty()) fail("an offer for another trial was taken");
      // Its own trial, offered as 10 bytes, then streamed on as 1 GiB.
      packtune::send_message(transfer, proto::Offer{11, name_of(assign->trial, "0.5"), 10, token});
      while (true) {
        auto t = next(transfer, "the pull of the offered file");
        if (auto* fetch = std::get_if<proto::FetchChunk>(&t.message)) {
          zmq::message_t data(fetch->length);
          std::memset(data.data(), 'x', data.size());
          packtune::send_message(transfer, proto::Chunk{fetch->transfer, fetch->offset, std::uint64_t{1} << 30, ""},
                                 data);
        } else if (auto* s = std::get_if<proto::Stored>(&t.message)) {
          if (s->error.find("offered as 10 bytes") == std::string::npos) {
            fail("an upload past its declared size was answered: '" + s->error + "'");
          }
          break;
        }
      }
      // A file the store does not hold for it.
      packtune::send_message(transfer, proto::FetchChunk{12, name_of(assign->trial + 1, "0.5"), 0, 1 << 20, token});
      auto chunk = expect<proto::Chunk>(transfer, "Chunk refusing a fetch");
      if (chunk.error.empty()) fail("a fetch of a file not given to this actor was served");
      say("actor: foreign offer, oversized upload and foreign fetch refused");
      // Hello again while holding the job: the job must go back to the queue.
      welcome = hello();
      say("actor: said Hello again holding trial " + std::to_string(assign->trial));
      continue;
    }
    proto::Report report;
    report.trial = assign->trial;
    report.budget = assign->budget;
    report.final = true;
    report.lease = assign->lease;
    report.train_seconds = 1;
    if (!injected) {
      injected = true;
      report.metrics = {{"val_accuracy", 0.5}, {"trial", 1e300}, {"budget", -7.0}, {std::string(100'000, 'm'), 1}};
      packtune::send_message(actor, report);
      const auto stop = expect<proto::Stop>(actor, "Stop after an injected report");
      if (stop.trial != assign->trial) fail("Stop for another trial");
      say("actor: a report with metric names trial and budget was refused");
      continue;
    }
    report.metrics = {{"val_accuracy", 0.25}, {"val_loss", 1.0}, {"train_loss", 1.0}};
    packtune::send_message(actor, report);
  }
  if (!injected) fail("the run ended before the injected report");
  say("done");
  return 0;
}
