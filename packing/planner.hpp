#pragma once
// Bins trials into actors by memory (the Pack paper's trade-off) and balances the work
// across them (FLEET's greedy allocation by estimated time). Trials of one shape form fused
// units (HFTA) up to the size where one more member stops paying for itself; the rest share
// an actor as mixed units. Pure logic: actors are figures, trials are shapes.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "packing/memory_model.hpp"

namespace packtune::packing {

struct ActorSpec {
  int id = 0;
  std::string device = "cpu";
  std::int64_t capacity_bytes = 0;  // 0: unknown, only the member cap applies
  std::int64_t base_bytes = 0;      // held before any trial: framework, data set
  int max_members = 1 << 30;
};

struct TrialDemand {
  std::int64_t trial = -1;
  TrialShape shape;
  double steps = 1;  // training steps of its job: the planner's measure of work
};

// Trials that train as one model (fused, K > 1) or one trial alone.
struct PlannedUnit {
  std::string key;
  std::vector<TrialDemand> members;
  UnitEstimate estimate;
  bool fused() const { return members.size() > 1; }
};

struct ActorPlan {
  ActorSpec actor;
  std::vector<PlannedUnit> units;
  std::int64_t estimated_bytes = 0;  // base + every unit's persistent + the largest transient
  double estimated_seconds = 0;
  std::int64_t persistent_bytes = 0;  // the parts of estimated_bytes, for quick fit checks
  std::int64_t largest_transient = 0;
  int member_count = 0;
  int members() const { return member_count; }
};

struct Unplaced {
  TrialDemand demand;
  std::string reason;
  bool waits = false;  // it fits an actor once room frees; false: it fits none
};

struct Plan {
  std::vector<ActorPlan> actors;
  std::vector<Unplaced> unplaced;
  int actors_used() const;
};

struct PlanOptions {
  bool fuse = true;
  // After packing tightly, spread work onto idle actors (off: the fewest actors that fit).
  bool balance = true;
  double headroom = 0.0;   // share of each capacity kept free
  double min_gain = 0.05;  // a fused unit grows while one more member adds this much throughput
  // Throughput model of a fused step: a fixed cost per step (dispatch, small-kernel
  // overhead) plus the members' FLOPs at the device's rate.
  double step_overhead_seconds = 1e-3;
  double device_flops = 5e10;
};

class Planner {
 public:
  explicit Planner(MemoryModel model = {}, PlanOptions options = {});

  const PlanOptions& options() const { return options_; }
  MemoryModel& memory_model() { return model_; }
  const MemoryModel& memory_model() const { return model_; }

  // The largest fused unit of this shape worth forming.
  int useful_members(const TrialShape& shape) const;
  double step_seconds(const TrialShape& shape, int members) const;

  // A plan for these trials from scratch.
  Plan plan(const std::vector<ActorSpec>& actors, const std::vector<TrialDemand>& trials) const;

  // Trials leave and arrive; the plan keeps every other trial where it is, except to bring
  // an actor back under its capacity when the memory model's figures grew. Returns how many
  // trials moved.
  int replan(Plan& plan, const std::vector<std::int64_t>& leaving,
             const std::vector<TrialDemand>& arriving) const;

  // Online placement (the driver): the actor for one trial among those with room, joining a
  // unit of its shape where that still pays, else the actor with the least estimated work.
  // The trial is added to `plan`. nullopt: no room now; `why` says whether it ever fits.
  std::optional<int> place(Plan& plan, const TrialDemand& trial, Unplaced* why = nullptr) const;
  bool remove(Plan& plan, std::int64_t trial) const;
  // Removes many trials in one pass; returns how many were found.
  int remove(Plan& plan, const std::vector<std::int64_t>& trials) const;

  // Re-derives an actor's estimates after its units changed or the model was corrected.
  void refresh(ActorPlan& actor) const;

 private:
  enum class Policy { FirstFit, LeastLoaded };
  struct Candidate {
    std::size_t actor;
    int unit;  // the unit it joins, -1 for a new unit
  };
  std::optional<Candidate> find_room(const Plan& plan, const std::vector<TrialDemand>& item,
                                     Policy policy, const std::vector<bool>* opened) const;
  void add(ActorPlan& actor, int unit, std::vector<TrialDemand> item) const;
  // `alone`: the item's own estimate as a new unit, when the caller has it already.
  bool fits(const ActorPlan& actor, int unit, const std::vector<TrialDemand>& item,
            const UnitEstimate* alone = nullptr) const;
  std::int64_t usable(const ActorSpec& actor) const;
  double unit_seconds(const PlannedUnit& unit) const;
  Unplaced why_unplaced(const Plan& plan, const TrialDemand& trial) const;
  void balance(Plan& plan) const;

  MemoryModel model_;
  PlanOptions options_;
};

}  // namespace packtune::packing
