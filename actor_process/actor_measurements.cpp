#include "actor_process/actor.hpp"

#include <algorithm>
#include <iterator>

#include "actor_process/keepalive.hpp"
#include "actor_process/logging.hpp"
#include "actors/device.hpp"
#include "actors/fused_group.hpp"
#include "actors/memory_profile.hpp"
#include "experiment/trial_shape.hpp"
#include "packtune/error.hpp"
#include "protocol/zmq_channel.hpp"

namespace packtune::actor_process {

namespace proto = protocol;

proto::Ready Actor::memory_figures(const std::string& device, actors::MemoryMeter& meter) {
  pack_device_ = device;
  proto::Ready r;
  // The heap glibc may keep after a step's buffers are freed is this process's memory
  // too: on a CPU it comes out of the same share as the trials'.
  r.base_bytes = meter.current_bytes() + retained_heap_bytes_;
  // On a GPU the data set lives in device memory, which the meter (CPU tensors) does not see.
  const auto gpu = actors::gpu_memory(device);
  r.base_bytes += gpu.held_bytes;
  if (spec_.actor_memory_bytes > 0) {
    r.capacity_bytes = spec_.actor_memory_bytes;
    r.capacity_shared = false;
    if (torch::Device(device).is_cpu()) meter.set_limit(spec_.actor_memory_bytes);
  } else if (torch::Device(device).is_cpu()) {
    r.capacity_bytes = available_memory_bytes();
  } else {
    r.capacity_bytes = gpu.total_bytes;  // shared: the driver splits it among the GPU's actors
  }
  return r;
}

void Actor::calibrate(const spec::TrialSpec& spec, torch::Device device) {
  // A plugin family or a TorchScript module has no formula for the planner to fall back on: a
  // GPU actor measures its tensors on the CPU (advance_profiles), where MemoryMeter counts them.
  if (!device.is_cpu() && !spec::measured_family(spec.model)) return;
  if (!profiled_.insert(trial_shape(spec).key).second) return;
  calibrations_.push_back(spec);
}

void Actor::queue_profile(const proto::Profile& request) {
  try {
    auto spec = request.spec;
    profiles_.push_back({request.key, trial_shape(spec).key, Clock::now(),
                         std::make_unique<actors::ThroughputProfiler>(spec, request.max_members, *stream_)});
  } catch (const std::exception& e) {
    send_message(socket_, proto::Profiled{request.key, pack_device_, {}, {}, actors::error_message(e)});
  }
}

bool Actor::advance_profiles(actors::PackExecutor& pack) {
  if (!calibrations_.empty()) {
    const auto spec = calibrations_.front();
    calibrations_.pop_front();
    const auto key = trial_shape(spec).key;
    try {
      // The run's stream options would change nothing for one member but add augmentation's
      // passing temporaries, which the correction would then scale every unit size by.
      std::int64_t bytes = 0;
      const auto start = Clock::now();
      {
        Keepalive keepalive(socket_, spec_.heartbeat_seconds);
        bytes = actors::measure_peak_bytes(spec, 1, input_, torch::Device(torch::kCPU), 2, torch::Device(pack_device_));
      }
      logging::info("actor {}: measured the memory of shape {} in {:.2f} s", id_, key,
                    std::chrono::duration<double>(Clock::now() - start).count());
      send_message(socket_, proto::Measured{key, 1, bytes});
      return true;
    } catch (const std::exception& e) {
      logging::warn("actor {}: could not profile the memory of shape {}: {}", id_, key, actors::error_message(e));
      return false;
    }
  }
  if (profiles_.empty()) return false;
  auto& task = profiles_.front();
  bool more = false;
  // Each K's own cost, between the pack's rounds: a first ResNet run on an H200 spent 21-26 s
  // of its first 33 in two profiles of 4 K each, and the pack's rounds between them.
  const int members = task.profiler->next_members();
  const auto start = Clock::now();
  // The pack's unit stands for a model of its size where it is the pack's only one and all of
  // its members are of the profile's shape: its rounds train them while they are timed.
  const auto sole = pack.sole_unit();
  const bool of_shape = !sole.empty() && std::all_of(sole.begin(), sole.end(), [&](const spec::TrialSpec* s) {
    return trial_shape(*s).key == task.shape;
  });
  // The keepalive holds the socket meanwhile: the rounds' reports go out after it.
  std::vector<actors::PackEvent> events;
  using Round = actors::ThroughputProfiler::Round;
  actors::ThroughputProfiler::PackUnit unit{static_cast<int>(sole.size()), [&] {
                                              auto round = pack.step_round();
                                              const bool reported = !round.empty();
                                              events.insert(events.end(), std::make_move_iterator(round.begin()),
                                                            std::make_move_iterator(round.end()));
                                              if (pack.sole_unit().size() != sole.size()) return Round::Changed;
                                              return reported ? Round::Reported : Round::Plain;
                                            },
                                            pack.sole_unit_warm()};
  const int pack_steps = task.profiler->pack_steps();
  {
    Keepalive keepalive(socket_, spec_.heartbeat_seconds);
    more = task.profiler->advance(of_shape ? &unit : nullptr);
  }
  const bool reported = handle_round(events);
  logging::info("actor {}: profile of shape {}: {} member(s) timed in {:.2f} s{}", id_, task.key, members,
                std::chrono::duration<double>(Clock::now() - start).count(),
                task.profiler->pack_steps() > pack_steps
                    ? fmt::format(", {} of its steps the pack's own unit of {}", task.profiler->pack_steps() - pack_steps,
                                  sole.size())
                    : std::string());
  if (more) return reported;
  proto::Profiled answer{task.key, pack_device_, {}, {}, task.profiler->error(), task.profiler->cut_short()};
  for (const auto& [members, seconds] : task.profiler->points()) {
    answer.members.push_back(members);
    answer.seconds.push_back(seconds);
  }
  logging::info("actor {}: profiled shape {} up to {} member(s) in {:.2f} s", id_, task.key,
               answer.members.empty() ? 0 : answer.members.back(),
               std::chrono::duration<double>(Clock::now() - task.asked).count());
  send_message(socket_, answer);
  profiles_.pop_front();
  return true;
}

proto::Tested Actor::run_test(const proto::Test& test) {
  proto::Tested out;
  out.trial = test.trial;
  try {
    const auto test_set = datasets::load_test_set(data_options());
    if (!test_set) throw InputError("the data set has no test split (docs/data.md)");
    const auto [inputs, labels] = stream_->prepare(*test_set);
    const auto& spec = test.spec;
    for (const auto& path : test.checkpoints) {
      try {
        const auto checkpoint = read_from_store(path);
        if (checkpoint.trial != test.trial) {
          throw InputError("checkpoint " + path + ": belongs to trial " + std::to_string(checkpoint.trial));
        }
        const auto shape = actors::input_shape(*stream_);
        actors::FusedGroup alone(spec, shape, stream_->device());
        alone.add(test.trial, spec, test.seed, &checkpoint);
        Keepalive keepalive(socket_, spec_.heartbeat_seconds);
        out.metrics = alone.evaluate_on(test.trial, inputs, labels, "test_");
        out.budget = checkpoint.budget;
        out.error.clear();
        logging::info("actor {}: trial {} at budget {:g}: test_accuracy {:.4f} on {} test images", id_,
                      test.trial, checkpoint.budget, out.metrics["test_accuracy"], test_set->count);
        break;
      } catch (const Error& e) {
        out.error = e.what();  // the next, older checkpoint may do
      }
    }
    if (out.metrics.empty() && out.error.empty()) out.error = "the driver holds no checkpoint of it";
  } catch (const std::exception& e) {
    out.error = actors::error_message(e);
  }
  if (!out.error.empty()) logging::warn("actor {}: no test metrics for trial {}: {}", id_, test.trial, out.error);
  return out;
}

}  // namespace packtune::actor_process
