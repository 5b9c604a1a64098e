#pragma once
// How long one fused training step of K trials takes on a kind of device: the planner's
// measure of whether fusing one more trial pays. Fitted per device from the profiles the
// actors take of each new shape (K = 1, 2, 4, ... until throughput stops growing), as the
// memory model is fitted from their measurements. Pure arithmetic, no device.
//
// Before a shape (or any shape it can fuse with) is profiled, a prior is used: a fixed cost
// per step plus the members' FLOPs at a nominal rate. Between measured K the step time is
// interpolated linearly; past the last measured K it grows with the last segment's slope
// (the profile stops where throughput saturates, so that slope is the per-member cost).
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "packing/memory_model.hpp"

namespace packtune::packing {

// "cuda:1" -> "cuda": actors on devices of one kind share their profiles.
std::string device_class(const std::string& device);

// Seconds of one step for K members; K = 1 is a trial trained alone, as a plain model.
using StepProfile = std::vector<std::pair<int, double>>;

class ThroughputModel {
 public:
  // A negative CPU overhead: the same as every other device's.
  ThroughputModel(double prior_step_overhead_seconds = 1e-3, double prior_device_flops = 5e10,
                  double prior_cpu_step_overhead_seconds = -1);

  // An actor on `device` timed these steps of `shape` (members ascending, seconds > 0).
  void record(const std::string& device, const TrialShape& shape, StepProfile profile);
  // Whether `key` itself was profiled on `device`'s kind; an empty device: on any kind.
  bool profiled(const std::string& device, const std::string& key) const;
  // Whether any profile can speak for this shape on `device` (empty: any kind): its own, or
  // one of a shape it fuses with (scaled by FLOPs).
  bool covered(const std::string& device, const TrialShape& shape) const;

  // One step of `members` trials of `shape` fused (padded to `shape`), on `device`; an
  // empty device takes the first device kind with a fitting profile.
  double step_seconds(const std::string& device, const TrialShape& shape, int members) const;
  double prior_step_seconds(const TrialShape& shape, int members, const std::string& device = "") const;

  // The profile of a shape on a device kind, as recorded (empty if none).
  StepProfile profile(const std::string& device, const std::string& key) const;

  // Whether a profile on `device`'s kind already shows that fusing `shape` cannot pay: a
  // shape it fuses with, with no more work per sample, gained less than `min_gain` from two
  // fused members. Fusion pays by amortising a step's fixed costs and filling an idle device;
  // a member that brings more work leaves less of either, so it gains less still. Then
  // profiling `shape` itself would only cost an actor its time (a CPU: each shape about
  // 0.2-0.5 s of training).
  bool fusion_ruled_out(const std::string& device, const TrialShape& shape, double min_gain) const;

 private:
  struct Table {
    TrialShape shape;
    StepProfile points;
  };
  const Table* table_for(const std::string& device, const TrialShape& shape) const;
  static double interpolate(const StepProfile& points, double members);

  double overhead_;
  double cpu_overhead_;
  double flops_;
  // device kind -> shape key; looked up by kind without building a string (the planner asks often)
  std::map<std::string, std::map<std::string, Table>, std::less<>> tables_;
};

}  // namespace packtune::packing
