#pragma once
// The calibration step of the throughput model (packing/throughput_model.hpp): times
// training steps of one trial shape alone (a plain model) and as K = 2, 4, 8, ... fused
// members, until one more doubling adds less than `min_gain` of throughput (or less than the
// spread between the timed windows), memory runs out or `max_members` is reached. Each K is
// timed in windows interleaved with windows of the K before it, and the two are compared.
// One K per advance(), so an actor profiles between the rounds
// of the pack it trains instead of stalling it.
//
// The pack's own unit of the shape, where it is the pack's only one, is its K's timer: its
// rounds are timed in place of a synthetic model of as many members, so those steps train
// trials instead of costing the pack time (on a CPU, where units are of one, K = 1 is then
// free and only K = 2 is synthetic). A unit whose size lies between two doublings is timed as
// a K of its own on the way.
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "actors/classifier.hpp"
#include "datasets/batch_stream.hpp"
#include "spec/trial_spec.hpp"

namespace packtune::actors {

// Whether K1 members (t1 seconds a step, windows spread1) add enough throughput over K0
// (t0, spread0) to profile the next doubling: more than min_gain, and more than the larger
// spread, since a gain within the timing's own noise is not a gain.
bool doubling_pays(int k0, double t0, double spread0, int k1, double t1, double spread1, double min_gain);

// The data as the profile cache keys it (protocol::Ready::data_context): what a model reads per
// sample and how the stream makes each member's batch, which take from a step's time too.
std::string profile_data_context(const spec::InputShape& input, const datasets::StreamOptions& stream);

class ThroughputProfiler {
 public:
  // `stream` as the run's data block sets it: with a per-trial order or per-trial augmentation
  // each member decodes its own batch, which takes from what fusing gains.
  ThroughputProfiler(spec::TrialSpec spec, int max_members, const spec::InputShape& input, torch::Device device,
                     datasets::StreamOptions stream = {}, double min_gain = 0.05);
  // Reading the pack's data through a reader of its own (BatchStream::reader), as an actor
  // profiles: a K timed on the pack's unit is then compared with models that gather and decode
  // batches as the pack does. On synthetic images that fit in a cache, a CPU step read 2-13%
  // faster than the pack's rounds, enough to make a fused pair look as if it paid.
  ThroughputProfiler(spec::TrialSpec spec, int max_members, const datasets::BatchStream& data,
                     double min_gain = 0.05);
  ~ThroughputProfiler();
  ThroughputProfiler(const ThroughputProfiler&) = delete;
  ThroughputProfiler& operator=(const ThroughputProfiler&) = delete;

  // What one round of the pack was, as far as timing goes.
  enum class Round {
    Plain,     // a training step of the unit
    Reported,  // with an evaluation (a report was due): a window with one is timed again
    Changed,   // the unit is no longer the pack's only one with `members` members (one ended)
  };
  // The pack's unit of this shape, when it trains alone in the actor: `step` runs one round of
  // the pack. Once it says Changed, that K is timed on a synthetic model after all.
  struct PackUnit {
    int members = 0;
    std::function<Round()> step;
    // Past its first allocations and its CUDA graph's capture (PackExecutor::sole_unit_warm):
    // timed without warming it up again, which a GPU's profile did at each use of the unit.
    bool warm = false;
  };

  // Times the next K, with `unit`'s rounds standing for a model of its size where the K (or the
  // K it is compared with) is that size. Returns false once the profile is complete (then
  // points() holds it).
  bool advance(const PackUnit* unit = nullptr);
  bool done() const { return done_; }
  // The K the next advance() times.
  int next_members() const { return next_; }
  // Seconds of one training step for each measured K, ascending.
  const std::vector<std::pair<int, double>>& points() const { return points_; }
  // Why the profile ended without any point, or "".
  const std::string& error() const { return error_; }
  // The profile ended at a K that failed (memory ran out, mostly), not where gains did: a
  // device with more room might fuse more.
  bool cut_short() const { return cut_short_; }
  // Timed steps that trained the pack's unit instead of a synthetic model.
  int pack_steps() const { return pack_steps_; }

 private:
  class StepTimer;
  // Seconds per step of one K's timed windows.
  struct Timing {
    double fastest = 1e300;
    double slowest = 0;
    void add(double seconds) {
      fastest = seconds < fastest ? seconds : fastest;
      slowest = seconds > slowest ? seconds : slowest;
    }
    double spread() const { return slowest / fastest - 1; }  // the slowest over the fastest, less 1
  };

  spec::TrialSpec spec_;
  int max_members_;
  spec::InputShape input_;
  torch::Device device_;
  double min_gain_;
  std::unique_ptr<datasets::BatchStream> stream_;
  // On a GPU, the last K's model, warmed up and captured: the next K times its windows against it
  // without building, warming up and capturing it again.
  std::unique_ptr<StepTimer> last_timer_;
  int next_ = 1;
  bool done_ = false;
  std::vector<std::pair<int, double>> points_;
  std::string error_;
  bool cut_short_ = false;
  int pack_steps_ = 0;
};

}  // namespace packtune::actors
