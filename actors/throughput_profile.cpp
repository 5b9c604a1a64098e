#include "actors/throughput_profile.hpp"

#include <chrono>
#include <functional>

#include "actors/fused_group.hpp"
#include "actors/memory_meter.hpp"
#include "actors/memory_profile.hpp"
#include "actors/pack_executor.hpp"
#include "actors/trial_runner.hpp"

namespace packtune::actors {
namespace {

using Clock = std::chrono::steady_clock;

// Enough steps to see past the first step's allocations, a fused group's CUDA graph capture
// and the timer's resolution, few enough that one K costs a pack at most a fraction of a
// second.
constexpr int kWarmupSteps = StepGraph::kWarmupSteps + 2;
constexpr int kMinTimedSteps = 3;
constexpr int kMaxTimedSteps = 30;
constexpr double kMinTimedSeconds = 0.02;
constexpr int kStreamBatches = 8;

}  // namespace

ThroughputProfiler::ThroughputProfiler(TrialSpec spec, int max_members, const InputShape& input,
                                       torch::Device device, double min_gain)
    : spec_(std::move(spec)), max_members_(std::max(1, max_members)), input_(input), device_(device),
      min_gain_(min_gain) {
  // Synthetic images of the experiment's shape: the profile never touches the pack's stream.
  stream_ = std::make_unique<datasets::BatchStream>(
      synthetic_split(input_, static_cast<std::uint32_t>(spec_.batch_size * kStreamBatches),
                      static_cast<std::uint32_t>(spec_.batch_size)),
      device_, 0);
}

double ThroughputProfiler::time_steps(int members) {
  // Reading one value back waits for every queued kernel: the clock stops when the device
  // has finished, not when the host has queued the work.
  std::function<void()> step;
  std::function<void()> wait;
  std::unique_ptr<TrialRunner> runner;
  std::unique_ptr<FusedGroup> group;
  if (members == 1) {
    runner = std::make_unique<TrialRunner>(0, spec_, 1, *stream_);
    step = [&] { runner->train_step(*stream_); };
    wait = [&] { runner->model()->parameters().front().view(-1)[0].item<float>(); };
  } else {
    group = std::make_unique<FusedGroup>(spec_, input_, device_);
    for (int k = 0; k < members; ++k) {
      auto member = spec_;
      member.optimizer.lr *= 1.0 + 0.01 * k;  // members differ as trials do; the work is the same
      group->add(k, member, static_cast<std::uint64_t>(k + 1));
    }
    step = [&] { group->train_step(*stream_); };
    wait = [&] { group->member_state(0).front().second.view(-1)[0].item<float>(); };
  }
  for (int s = 0; s < kWarmupSteps; ++s) {
    stream_->begin_round();
    step();
  }
  wait();
  const auto start = Clock::now();
  int steps = 0;
  double seconds = 0;
  while (steps < kMaxTimedSteps && (steps < kMinTimedSteps || seconds < kMinTimedSeconds)) {
    stream_->begin_round();
    step();
    ++steps;
    if (steps >= kMinTimedSteps) {
      wait();
      seconds = std::chrono::duration<double>(Clock::now() - start).count();
    }
  }
  stream_->begin_round();
  return seconds / steps;
}

bool ThroughputProfiler::advance() {
  if (done_) return false;
  const int k = next_;
  try {
    points_.emplace_back(k, time_steps(k));
  } catch (const std::exception& e) {
    // The largest K that fits is where the profile ends; a failure at K = 1 is an error.
    if (points_.empty()) error_ = error_message(e);
    done_ = true;
    return false;
  }
  if (points_.size() >= 2) {
    const auto& [k0, t0] = points_[points_.size() - 2];
    const double gain = (k / points_.back().second) / (k0 / t0) - 1;
    if (gain < min_gain_) done_ = true;
  }
  if (k * 2 > max_members_) done_ = true;
  next_ = k * 2;
  return !done_;
}

}  // namespace packtune::actors
