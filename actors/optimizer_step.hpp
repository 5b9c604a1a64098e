#pragma once
// One optimizer's share of a fused step (actors/fused_optimizer.hpp). A unit's parameters are
// stacked [K, ...] whatever each member's optimizer. Each optimizer present in the unit keeps
// its own state slots over all K rows and gives every row a direction and a rate; the unit
// keeps, row by row, its member's own optimizer's (torch::where) and steps p - rate * direction.
// So a member's arithmetic is its optimizer's alone whatever else its unit holds, and an
// optimizer is a row of spec/optimizers.def and one file of actors/optimizers/.
//
// Weight decay is the unit's: the gradient an l2 optimizer's update() sees has weight_decay * w
// joined, and a decoupled optimizer's weights have already shrunk. The CPU's rows() gets the raw
// gradient and applies its member's decay itself, in the same order.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <ATen/ATen.h>

#include "spec/optimizer_table.hpp"
#include "spec/trial_spec.hpp"

namespace packtune::actors {

// [K, 1] columns every optimizer may read at a step. The fused optimizer owns them and writes
// them in place, so a CUDA graph that captured a step reads the step's values.
struct StepColumns {
  at::Tensor lr;       // float32: each member's rate at this step (its schedule applied)
  at::Tensor lr64;     // float64: the same, for what torch::optim computes in double on the host
  at::Tensor steps64;  // float64: each member's step count, this step included
};

// One member's values at this step for the CPU's one pass, rounded to float as LibTorch rounds
// a Scalar.
struct MemberRate {
  float rate = 0;   // its rate at this step
  float l2 = 0;     // weight decay joined to the gradient; 0: none
  float decay = 1;  // decoupled: the weights are first scaled by 1 - rate * wd; 1: none
};

// A [K, 1] column of per-member values on the unit's device.
using MakeColumn = std::function<at::Tensor(const std::vector<double>& values, at::ScalarType dtype)>;

class OptimizerStep {
 public:
  virtual ~OptimizerStep() = default;

  // Every member's hyper-parameters, all K rows, and which are this optimizer's (`own`; the
  // other rows are computed and discarded): when members join, leave or are exploited, never
  // per step.
  virtual void refresh(const std::vector<spec::OptimizerSpec>& members, const std::vector<bool>& own,
                       const MakeColumn& column) = 0;

  // The whole-tensor form, a GPU's. begin() runs once a step before the parameters, and only
  // launches device operations (a CUDA graph may capture it).
  virtual void begin(const StepColumns&) {}
  struct Update {
    at::Tensor direction;  // [K, n]
    at::Tensor rate;       // [K, 1]
  };
  // One parameter's gradient `grad` ([K, n], decay applied) updates this optimizer's `slots`
  // (each a [K, n] view) and gives each row's direction and rate.
  virtual Update update(const at::Tensor& grad, const std::vector<at::Tensor>& slots, const StepColumns& columns) = 0;

  // The CPU's one pass. begin_rows() once a step, with each member's rate (its schedule
  // applied) and step count (this step included) in double; then rows() over `n` elements of
  // member m: weights `w`, gradient `g`, and one pointer per slot. Each element's arithmetic is
  // the tensor form's, rounded to float at every operation and never contracted into an FMA
  // (actors/optimizers/ compiles with -ffp-contract=off), so it reads only member m's values.
  virtual void begin_rows(const std::vector<double>& /*rates*/, const double* /*steps*/) {}
  virtual void rows(std::size_t m, const MemberRate& rate, float* w, const float* g, float* const* slots,
                    std::int64_t n) const = 0;
};

// torch::optim's default eps for Adam, AdamW and RMSprop. On the CPU it is added in float, as
// LibTorch adds a Scalar to a float tensor.
constexpr double kTorchEps = 1e-8;

// The most state slots an optimizer keeps per parameter: the CPU's one pass hands a member's
// slots over as a fixed array.
constexpr std::size_t kMaxSlots = 4;

constexpr std::size_t count_words(const char* text) {
  std::size_t n = 0;
  for (bool in_word = false; *text; ++text) {
    const bool letter = *text != ' ';
    n += letter && !in_word;
    in_word = letter;
  }
  return n;
}
#define OPTIMIZER(kind, name, slots, decay, adaptive, doc) \
  static_assert(count_words(slots) <= kMaxSlots, name " keeps more state slots than kMaxSlots");
#include "spec/optimizers.def"

// Each optimizer's step, defined in its file of actors/optimizers/ with
// PACKTUNE_OPTIMIZER_STEP(Kind, ItsStepClass).
template <spec::OptimizerKind Kind>
std::unique_ptr<OptimizerStep> make_optimizer_step();
#define OPTIMIZER(kind, name, slots, decay, adaptive, doc) \
  template <>                                         \
  std::unique_ptr<OptimizerStep> make_optimizer_step<spec::OptimizerKind::kind>();
#include "spec/optimizers.def"

std::unique_ptr<OptimizerStep> make_optimizer_step(spec::OptimizerKind kind);

}  // namespace packtune::actors

// In namespace packtune::actors: the step of optimizer `Kind` (spec/optimizers.def) is `Step`.
#define PACKTUNE_OPTIMIZER_STEP(Kind, Step)                                     \
  template <>                                                                  \
  std::unique_ptr<OptimizerStep> make_optimizer_step<spec::OptimizerKind::Kind>() { \
    return std::make_unique<Step>();                                           \
  }
