#pragma once
// Learning-rate schedules: the factor of a trial's base rate (`lr`) at each optimizer step.
// The closed forms of torch.optim.lr_scheduler's (CosineAnnealingLR with eta_min 0, LinearLR
// to 0, StepLR, OneCycleLR), after an optional linear warmup from 1% (torchvision's recipe:
// LinearLR(start_factor=0.01) then the schedule, as SequentialLR chains them). Steps are
// optimizer steps, not epochs: the rate moves at every batch.
//
// A schedule runs over the steps of budget.max, not over a job's budget: a trial promoted from
// rung to rung follows the curve of one trained to the end without stopping, since its step
// count (kept in its checkpoint) says where on the curve it is. Plain C++, no LibTorch: the
// driver validates these keys before any process starts.
#include <cstdint>
#include <string>
#include <vector>

namespace packtune::spec {

struct LrSchedule {
  std::string name = "constant";  // constant | cosine | linear | step | one_cycle
  double warmup = 0;      // budget units of linear warmup (one_cycle: its rising phase; 0: 30%)
  double step_every = 0;  // step: budget units between decays
  double factor = 0.1;    // step: each decay's factor

  bool operator==(const LrSchedule& o) const {
    return name == o.name && warmup == o.warmup && step_every == o.step_every && factor == o.factor;
  }
  bool constant() const { return name == "constant" && warmup == 0; }
};

const std::vector<std::string>& schedule_names();

// A schedule's lengths in optimizer steps, for one trial (its batch size sets the steps of an
// epoch): `total` the steps of budget.max, `warmup` and `step_every` likewise.
struct ScheduleSteps {
  std::int64_t total = 0;
  std::int64_t warmup = 0;
  std::int64_t step_every = 0;
};

// Warmup's first factor, torchvision's lr_warmup_decay.
constexpr double kWarmupStart = 0.01;
// OneCycleLR's defaults.
constexpr double kOneCycleRise = 0.3, kOneCycleDiv = 25, kOneCycleFinalDiv = 1e4;

// The factor of the base rate for the optimizer step that follows `step` steps (0: the first).
// Past `total` the schedule stays at its end.
double lr_factor(const LrSchedule& schedule, const ScheduleSteps& steps, std::int64_t step);

}  // namespace packtune::spec
