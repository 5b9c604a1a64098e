// Hostile peers joining the driver: each record of the input (records.hpp) is one message
// from one of a few peers, and goes where the driver's loop sends it (driver.cpp handle()):
// NodeHello and Hello are checked (protocol::refusal: the protocol version, counts and sizes in
// range) and admitted into the driver's registry; a node's ActorExited settles a slot; an
// actor's Ready gives the planner its capacity; Measured calibrates the memory model; an
// actor's Report, Tested and Offer (a checkpoint transfer) meet the admission rules
// (driver/admission.hpp), against a job the fuzzer's bytes choose. After each message the planner plans a
// few trials on what the registry now says: the numbers peers sent reach the planner's
// arithmetic, where an overflow is undefined behaviour (UBSan reports it).
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "driver/actor_registry.hpp"
#include "driver/admission.hpp"
#include "fuzz/records.hpp"
#include "packing/planner.hpp"
#include "packtune/error.hpp"
#include "protocol/protocol.hpp"

namespace {

namespace proto = packtune::protocol;
using Clock = std::chrono::steady_clock;

packtune::packing::TrialShape mlp_shape() {
  packtune::packing::TrialShape s;
  s.key = s.fusion = "mlp-784-256-10";
  s.parameters = 784 * 256 + 256 + 256 * 10 + 10;
  s.largest_parameter = 784 * 256;
  s.activations_per_sample = 784 + 256 + 10;
  s.flops_per_sample = 2 * s.parameters;
  s.batch_size = 128;
  s.optimizer_slots = 2;
  s.adaptive = true;
  return s;
}

void deliver(packtune::ActorRegistry& registry, packtune::packing::Planner& planner, const std::string& identity,
             const proto::Message& message, Clock::time_point now) {
  if (auto* hello = std::get_if<proto::NodeHello>(&message)) {
    if (proto::refusal(*hello).empty()) registry.add_node(identity, *hello, now);
    return;
  }
  if (auto* node = registry.node(identity)) {
    if (auto* exited = std::get_if<proto::ActorExited>(&message)) {
      registry.slot_exited(node->id, exited->local_index, !exited->restarting);
      if (auto* actor = registry.actor_in_slot(node->id, exited->local_index, exited->pid)) registry.mark_dead(*actor);
    }
    return;
  }
  if (auto* hello = std::get_if<proto::Hello>(&message)) {
    if (proto::refusal(*hello).empty()) registry.add_actor(identity, *hello, now);
    return;
  }
  auto* actor = registry.actor(identity);
  if (!actor || actor->dead) return;
  if (auto* ready = std::get_if<proto::Ready>(&message)) {
    if (proto::refusal(*ready).empty()) {
      registry.mark_ready(*actor, *ready);
    } else {
      registry.mark_dead(*actor);  // the driver retires it
    }
  } else if (auto* measured = std::get_if<proto::Measured>(&message)) {
    const auto shape = mlp_shape();
    if (measured->key == shape.key && proto::refusal(*measured).empty()) {
      planner.memory_model().record_measurement(shape, measured->members, measured->peak_bytes);
    }
  } else if (std::holds_alternative<proto::ActorFailed>(message)) {
    registry.mark_dead(*actor);
  } else if (auto* report = std::get_if<proto::Report>(&message)) {
    const packtune::Admission::Held held{report->trial, report->start_budget, report->budget / 2};
    (void)packtune::Admission::metrics_refusal(report->metrics, false);
    (void)packtune::Admission::budget_refusal(report->budget, held);
  } else if (auto* tested = std::get_if<proto::Tested>(&message)) {
    (void)packtune::Admission::metrics_refusal(tested->metrics, true);
  } else if (auto* offer = std::get_if<proto::Offer>(&message)) {
    const packtune::Admission::Held held{static_cast<packtune::tuners::TrialId>(offer->transfer % 64),
                                        static_cast<double>(offer->size % 1000) / 8, 0.5};
    (void)packtune::Admission::offer_refusal(*offer, held, (offer->transfer & 64) != 0);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  packtune::ActorRegistry registry({60, 60, 30});
  packtune::packing::PlanOptions options;
  options.headroom = 0.1;
  packtune::packing::Planner planner({}, options);
  const auto start = Clock::now();
  auto now = start;
  for (const auto& record : packtune::fuzz::split_records(data, size)) {
    now += std::chrono::seconds(1);
    proto::Message message;
    try {
      message = proto::decode(record.bytes.data(), record.bytes.size());
    } catch (const packtune::Error&) {
      continue;  // the driver logs it and goes on
    }
    deliver(registry, planner, "peer-" + std::to_string(record.peer % 8), message, now);

    std::vector<packtune::packing::TrialDemand> trials;
    for (int i = 0; i < 4; ++i) trials.push_back({i, mlp_shape(), 1000});
    const auto plan = planner.plan(registry.capacities(8), trials);
    (void)plan;
    (void)registry.open_slots();
    (void)registry.settled(now);
    (void)registry.live_actors();
    (void)registry.silent_actors(now + std::chrono::seconds(61));
  }
  return 0;
}
