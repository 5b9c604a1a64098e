#pragma once
// The memory a trial needs on its actor, from its shape alone, and corrected by what the
// actors measure. Pure arithmetic, so the planner can be tested without a device.
//
// A unit is what trains as one model: a solo trial, or K trials fused (HFTA). Its memory is
//   persistent  K x parameters x (weights + gradients + optimizer slots)
//               + K batches, where each member reads a batch of its own (data.order or
//               augment per_trial): a pack fetches a round's batches before its units step
//   transient   the larger of: the activations autograd keeps for one batch plus one
//               gradient buffer of the largest weight (backward), or the optimizer's
//               temporaries of the largest weight (the step)
// A pack (everything on one actor) holds every unit's persistent memory, but its units step
// in turn, so only the largest transient is live at once. The coefficients were fitted to
// MemoryMeter's exact counts for the shipped MLP and CNN (docs/planner.md).
#include <cstdint>
#include <map>
#include <string>

namespace packtune::packing {

struct TrialShape {
  std::string key;     // the exact shape: widths, batch size, optimizer (what memory and speed follow)
  std::string fusion;  // trials with equal fusion keys can train as one model, padded to the
                       // widest member (HFTA); empty: only trials of this exact shape
  std::int64_t parameters = 0;
  std::int64_t largest_parameter = 0;
  std::int64_t activations_per_sample = 0;
  std::int64_t flops_per_sample = 0;  // forward; a training step costs about 3x
  int batch_size = 1;
  int optimizer_slots = 0;  // per-parameter state tensors: SGD+momentum 1, Adam 2
  bool adaptive = false;    // Adam/AdamW: more temporaries per step than SGD
  bool weight_decay = false;  // decays weights (no longer changes the estimate; plan files keep it)
  int bytes_per_value = 4;  // float32
  // The input values of the batch each member reads for itself (batch x values per sample),
  // where a member's order or augmentation is its own; 0 where a pack's members share one
  // batch. Equal for all shapes of one fusion key.
  std::int64_t own_batch_values = 0;
  // No formula knows this shape (a model plugin's family): its figure is what an actor
  // measured, and until one did the planner trains it alone (Planner::fits).
  bool memory_unknown = false;
  // memory_unknown: orders the shapes of one fusion key by size (their widths), so that a
  // padded unit takes its widest member's figure; the formula's shapes order by parameters.
  std::int64_t width_rank = 0;
  // False: trials of this shape never fuse, whatever the fuse mode: each trains as a unit of
  // its own, its members packed beside others (a TorchScript module, which cannot be stacked).
  bool fuses = true;
};

struct UnitEstimate {
  std::int64_t persistent = 0;
  std::int64_t transient = 0;
  std::int64_t peak() const { return persistent + transient; }
};

// The formula alone, for `members` trials of one shape, fused or (members == 1) solo.
UnitEstimate formula_estimate(const TrialShape& shape, int members);

// The formula with each shape's measured correction. Measurements only ever raise or lower
// the figure of their own shape; an out-of-memory failure raises it. A memory_unknown shape
// has no formula to correct: its figure is the measured bytes per member, times the members
// (fused members share nothing the figure could subtract), and 0 until it is measured.
class MemoryModel {
 public:
  UnitEstimate estimate(const TrialShape& shape, int members) const;
  std::int64_t solo_bytes(const TrialShape& shape) const { return estimate(shape, 1).peak(); }

  // An actor measured `peak_bytes` for `members` trials of this shape.
  void record_measurement(const TrialShape& shape, int members, std::int64_t peak_bytes);
  // A unit of this shape ran out of memory: its figure grows by `factor` (at least).
  void correct_upward(const std::string& key, double factor = 1.5);

  bool measured(const std::string& key) const { return measured_.count(key) > 0; }
  // A shape whose memory nothing says yet: the planner places it alone on its actor.
  bool unmeasured(const TrialShape& shape) const { return shape.memory_unknown && !measured(shape.key); }
  // Multiplies every estimate: above 1 for a safety margin; below 1 only to test recovery
  // from running out of memory.
  void set_scale(double scale) { scale_ = scale; }
  double correction(const std::string& key) const;

 private:
  UnitEstimate measured_estimate(const TrialShape& shape, int members) const;

  std::map<std::string, double> correction_;  // key -> measured / formula
  std::map<std::string, bool> measured_;
  std::map<std::string, std::int64_t> member_bytes_;  // memory_unknown shapes: key -> bytes per member
  double scale_ = 1.0;
};

}  // namespace packtune::packing
