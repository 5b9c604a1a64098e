#include "actors/throughput_profile.hpp"

#include <algorithm>
#include <chrono>
#include <functional>

#include <torch/cuda.h>

#include "actors/fused_group.hpp"
#include "actors/memory_meter.hpp"
#include "actors/memory_profile.hpp"
#include "actors/pack_executor.hpp"

namespace packtune::actors {
namespace {

using Clock = std::chrono::steady_clock;

// Enough steps to see past the first step's allocations (and oneDNN's kernel choice on a
// CPU), a fused group's CUDA graph capture and the timer's resolution, few enough that one K
// costs a pack at most a fraction of a second. A CPU step has finished when it returns and
// takes milliseconds: a window of one step reads true there, and each step more is an actor's
// time spent on nothing (a ResNet profile took 3 s of a 13 s run on this CPU with the GPU's
// counts).
constexpr int kWarmupSteps = StepGraph::kWarmupSteps + 2;
constexpr int kCpuWarmupSteps = 2;
constexpr int kMinTimedSteps = 3;
constexpr int kMaxTimedSteps = 30;
constexpr double kMinTimedSeconds = 0.02;
// The fastest of a few timed windows: a window the OS or another actor's thread interrupted
// reads slow, and one slow K = 1 made a fused pair look 9% faster on a CPU where fusing loses
// (2026-11-25, a profile of 10.1 ms for one member against 8.3-8.8 ms in other runs).
constexpr int kTimedWindows = 3;
constexpr int kWindowAttempts = 3;  // a window of the pack's in which it evaluated, timed again
constexpr int kStreamBatches = 8;

}  // namespace

std::string profile_data_context(const spec::InputShape& input, const datasets::StreamOptions& stream) {
  std::string text = input.images ? "images " + std::to_string(input.channels) + "x" + std::to_string(input.height) +
                                        "x" + std::to_string(input.width)
                                  : std::to_string(input.channels * input.height * input.width) + " features";
  text += input.task == datasets::Task::Regression ? ", " + std::to_string(input.outputs) + " regression targets"
                                                   : ", " + std::to_string(input.outputs) + " classes";
  if (stream.augment.any()) {
    text += ", augment";
    if (stream.augment.crop_padding > 0) text += " crop " + std::to_string(stream.augment.crop_padding);
    if (stream.augment.flip) text += " flip";
    text += stream.augment.per_trial ? " per trial" : " shared";
  }
  text += stream.order_per_trial ? ", order per trial" : ", order shared";
  return text;
}

bool doubling_pays(int k0, double t0, double spread0, int k1, double t1, double spread1, double min_gain) {
  const double gain = (k1 / t1) / (k0 / t0) - 1;
  // On a shared CPU one K's windows spread by 10-20% while fusing never paid there.
  return gain >= std::max(min_gain, std::max(spread0, spread1));
}

ThroughputProfiler::ThroughputProfiler(spec::TrialSpec spec, int max_members, const spec::InputShape& input,
                                       torch::Device device, datasets::StreamOptions stream, double min_gain)
    // Members of a shape that never fuses train as units of their own: K = 1 is all there is.
    : spec_(std::move(spec)), max_members_(spec::fuses(spec_.model) ? std::max(1, max_members) : 1), input_(input),
      device_(device),
      min_gain_(min_gain) {
  // Synthetic images of the experiment's shape: the profile never touches the pack's stream.
  stream_ = std::make_unique<datasets::BatchStream>(
      synthetic_split(input_, static_cast<std::uint32_t>(spec_.batch_size * kStreamBatches),
                      static_cast<std::uint32_t>(spec_.batch_size)),
      device_, 0, stream);
}

namespace {
// Thrown by a window whose pack unit stopped being the pack's only one: its K is timed on a
// synthetic model instead. Not a std::exception, so no failure handler takes it for one.
struct UnitChanged {};
}  // namespace

ThroughputProfiler::ThroughputProfiler(spec::TrialSpec spec, int max_members, const datasets::BatchStream& data,
                                       double min_gain)
    : spec_(std::move(spec)), max_members_(spec::fuses(spec_.model) ? std::max(1, max_members) : 1),
      input_(input_shape(data)), device_(data.device()), min_gain_(min_gain),
      stream_(std::make_unique<datasets::BatchStream>(data.reader(0))) {}

// One K's model on the profile's stream (a plain trial, or K fused members), or the pack's own
// unit of K members, warmed up and ready to time windows of steps.
class ThroughputProfiler::StepTimer {
 public:
  StepTimer(const spec::TrialSpec& spec, const spec::InputShape& input, torch::Device device, int members,
            datasets::BatchStream& stream)
      : device_(device) {
    group_ = std::make_unique<FusedGroup>(spec, input, device);
    for (int k = 0; k < members; ++k) {
      auto member = spec;
      member.optimizer.lr *= 1.0 + 0.01 * k;  // members differ as trials do; the work is the same
      group_->add(k, member, static_cast<std::uint64_t>(k + 1));
    }
    step_ = [this, &stream] {
      stream.begin_round();
      group_->train_step(stream);
      return Round::Plain;
    };
    warm_up();
  }

  // The pack's rounds, each counted in `steps`. Its warm-up trains the pack too, and takes a
  // unit that just joined past its first allocations and CUDA graph capture; a warm unit has
  // none to take.
  StepTimer(const PackUnit& unit, torch::Device device, int& steps) : device_(device), steps_(&steps) {
    step_ = unit.step;
    if (!unit.warm) warm_up();
  }

  bool pack() const { return steps_ != nullptr; }

  // Seconds per step over one window of at least kMinTimedSeconds and, on a GPU, kMinTimedSteps.
  // The steps go in doubling batches with one wait after each: waiting after every step would
  // time a GPU's sub-millisecond steps without the queueing a pack's rounds get. A window in
  // which the pack evaluated is timed again (a few times at most): an evaluation is no step.
  double window() {
    double seconds_per_step = 0;
    for (int attempt = 0; attempt < kWindowAttempts; ++attempt) {
      const auto start = Clock::now();
      int steps = 0;
      double seconds = 0;
      bool plain = true;
      for (int batch = device_.is_cuda() ? kMinTimedSteps : 1;
           steps < kMaxTimedSteps && (steps == 0 || seconds < kMinTimedSeconds);
           batch = steps) {
        for (int i = 0; i < batch && steps < kMaxTimedSteps; ++i, ++steps) plain = step() && plain;
        wait();
        seconds = std::chrono::duration<double>(Clock::now() - start).count();
      }
      seconds_per_step = seconds / steps;
      if (plain) break;
    }
    return seconds_per_step;
  }

 private:
  void warm_up() {
    for (int s = 0; s < (device_.is_cuda() ? kWarmupSteps : kCpuWarmupSteps); ++s) step();
    wait();
  }
  // Whether it was a plain step.
  bool step() {
    const auto round = step_();
    if (steps_) ++*steps_;  // the round trained the pack, whatever it was
    if (round == Round::Changed) throw UnitChanged{};
    return round == Round::Plain;
  }
  // The clock stops when the device has finished, not when the host has queued the work. A
  // CPU's steps have finished when they return.
  void wait() {
    if (device_.is_cuda()) torch::cuda::synchronize(device_.has_index() ? device_.index() : -1);
  }

  torch::Device device_;
  std::unique_ptr<FusedGroup> group_;  // a synthetic model's
  std::function<Round()> step_;
  int* steps_ = nullptr;  // the pack's steps timed, where this is the pack's unit
};

ThroughputProfiler::~ThroughputProfiler() = default;

bool ThroughputProfiler::advance(const PackUnit* unit) {
  if (done_) return false;
  const int k = next_;
  Timing now;
  Timing before;  // the previous K, timed again in windows between this K's
  const auto timer_of = [&](int members) {
    return unit && unit->members == members ? std::make_unique<StepTimer>(*unit, device_, pack_steps_)
                                            : std::make_unique<StepTimer>(spec_, input_, device_, members, *stream_);
  };
  try {
    auto timer = timer_of(k);
    std::unique_ptr<StepTimer> previous = std::move(last_timer_);
    if (!previous && !points_.empty()) previous = timer_of(points_.back().first);
    // Interleaved, the two see the same machine: another process that slows the CPU (or the
    // device) for a while slows both K instead of making the one timed then look worse. On a
    // 2-core CPU shared with another actor, timing them one after another made a fused pair
    // look 30-50% faster where it is slower.
    for (int window = 0; window < kTimedWindows; ++window) {
      now.add(timer->window());
      if (previous) before.add(previous->window());
    }
    stream_->begin_round();
    // On a GPU a K is built, warmed up for kWarmupSteps and captured before it is timed: kept, the
    // next K need not repeat that for it. On a CPU that is two steps, and between advances the
    // actor's memory belongs to the pack it trains.
    // The pack's unit is not the profile's to keep.
    if (device_.is_cuda() && !timer->pack()) last_timer_ = std::move(timer);
  } catch (const UnitChanged&) {
    last_timer_.reset();
    return advance(nullptr);
  } catch (const std::exception& e) {
    // The largest K that fits is where the profile ends; a failure at K = 1 is an error.
    if (points_.empty()) error_ = error_message(e);
    cut_short_ = !points_.empty();
    done_ = true;
    last_timer_.reset();
    return false;
  }
  if (!points_.empty()) {
    const auto [k0, t0] = points_.back();
    // The fastest window of all is the previous K's figure; the gain compares the pair.
    points_.back().second = std::min(t0, before.fastest);
    if (!doubling_pays(k0, before.fastest, before.spread(), k, now.fastest, now.spread(), min_gain_)) done_ = true;
  }
  points_.emplace_back(k, now.fastest);
  // The next K doubles this one, unless the pack's unit lies between the two: then its size is
  // the next K, so that its own rounds are timed (a GPU's first unit of 20 members: K = 1, 2, 4,
  // 8, 16, 20, 40, ...).
  next_ = unit && unit->members > k && unit->members < 2 * k ? unit->members : 2 * k;
  if (next_ > max_members_) done_ = true;
  if (done_) last_timer_.reset();  // its memory goes back to the pack
  return !done_;
}

}  // namespace packtune::actors
