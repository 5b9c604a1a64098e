#pragma once
// Bins trials into actors by memory (the Pack paper's trade-off) and balances the work
// across them (FLEET's greedy allocation by estimated time). Trials of one shape form fused
// units (HFTA) up to the size where one more member stops paying for itself; the rest share
// an actor as mixed units. Pure logic: actors are figures, trials are shapes.
//
// The algorithms live in files of their own: first fit (first_fit.hpp, over room_tree.hpp),
// least-loaded placement (least_loaded.cpp), balance (balance.cpp), the unit estimates
// (unit_estimates.cpp) and the index filing (plan_filing.cpp); planner.cpp composes them.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "packing/fuse_mode.hpp"
#include "packing/memory_model.hpp"
#include "packing/mixed_packs.hpp"
#include "packing/plan_index.hpp"
#include "packing/throughput_model.hpp"

namespace packtune::packing {

struct ActorSpec {
  int id = 0;
  std::string device = "cpu";
  std::int64_t capacity_bytes = 0;  // 0: unknown, only the member cap applies
  std::int64_t base_bytes = 0;      // held before any trial: framework, data set
  int max_members = 1 << 30;
  // Units trained side by side (a fused unit counts once); see MixedPacks.
  int max_units = 1 << 30;
};

struct TrialDemand {
  std::int64_t trial = -1;
  TrialShape shape;
  double steps = 1;  // training steps of its job: the planner's measure of work
};

// Trials that train as one model (fused, K > 1; padded to its widest member) or one trial
// alone. A solo unit trains as a plain model and never takes another member.
struct PlannedUnit {
  std::int64_t id = -1;  // unique within its plan: the actor groups a unit's members by it
  std::string key;       // the fusion key its members share
  std::vector<TrialDemand> members;
  bool solo = false;
  TrialShape shape;      // the padded shape the unit trains at (see padded_shape)
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
  std::int64_t next_unit_id = 0;
  // The planner's lookups over `actors` (see plan_index.hpp). Change `actors` outside the
  // planner only through Planner::refresh (or by resizing it): either makes it rebuild this.
  PlanIndex index;
  int actors_used() const;
};

struct PlanOptions {
  FuseMode fuse = FuseMode::Auto;
  // After packing tightly, spread work onto idle actors (off: the fewest actors that fit).
  bool balance = true;
  double headroom = 0.0;   // share of each capacity kept free
  double min_gain = 0.05;  // a fused unit grows while one more member adds this much throughput
  // The throughput model's prior, until actors profile a shape: a fixed cost per step
  // (dispatch, small-kernel overhead) plus the members' FLOPs at the device's rate.
  double step_overhead_seconds = 1e-3;
  double device_flops = 5e10;
  // The prior's fixed cost per step on a CPU; negative: step_overhead_seconds. Measured on
  // a CPU, a fused pair cost more than two plain models (docs/planner.md), so 0 there keeps
  // units single until a profile says fusing pays (src/experiment/planner_setup.hpp: what
  // `packtune run` and `packtune plan` use).
  double cpu_step_overhead_seconds = -1;
};

class Planner {
 public:
  explicit Planner(MemoryModel model = {}, PlanOptions options = {});

  const PlanOptions& options() const { return options_; }
  MemoryModel& memory_model() { return model_; }
  const MemoryModel& memory_model() const { return model_; }
  const ThroughputModel& throughput_model() const { return throughput_; }
  // Profiles change which units pay; record them here so cached figures follow.
  void record_profile(const std::string& device, const TrialShape& shape, StepProfile profile);

  // Whether the actor may take one more trial: a free member slot, and room for a unit of
  // its own or a fused unit it could join. The driver draws jobs while some actor does.
  bool takes_more(const ActorPlan& actor) const;
  // The trials the plan's actors could start now: for each that takes_more, its free member
  // slots as far as its unit slots allow (at least one). Kept in the plan's index, so that
  // asking it before every job costs nothing at 10,000 actors.
  std::int64_t free_slots(Plan& plan) const;

  // The largest fused unit of this shape worth forming on a device of this kind ("" for
  // any): with fuse "auto", where one more member stops adding min_gain of throughput.
  int useful_members(const TrialShape& shape, const std::string& device = "") const;
  double step_seconds(const TrialShape& shape, int members, const std::string& device = "") const;
  // The bytes of an actor's capacity its units may fill: all but the headroom (no limit where
  // the capacity is unknown).
  std::int64_t usable(const ActorSpec& actor) const;

  // The shape a fused unit of these trials trains at: the member with the most parameters,
  // with every figure raised to the largest among the members (padding to the widest).
  static TrialShape padded_shape(const std::vector<TrialDemand>& members);
  static const std::string& fusion_key(const TrialShape& shape);

  // The unit a placed trial belongs to, or nullptr.
  static const PlannedUnit* unit_of(const Plan& plan, std::int64_t trial);

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
  // Call it after changing a plan's actors outside the planner: it marks plan indices stale.
  void refresh(ActorPlan& actor) const;

 private:
  friend class ReferencePlanner;  // tests/packing: the scanning planner this one must agree with
  struct Candidate {
    std::size_t actor;
    int unit;  // the unit it joins, -1 for a new unit
  };
  // First fit (plan): the first opened actor in order that takes the item.
  class FirstFit;
  // The earliest estimated finish (place), as a scan of every actor in order would find it.
  std::optional<Candidate> least_loaded(const Plan& plan, const TrialDemand& trial) const;
  // Online: re-estimate every unit of the actor (the model may have changed since); else
  // (inside plan) only the one that changed, and Unfiled leaves the index to the caller.
  enum class Mode { Online, Planning, Unfiled };
  void add(Plan& plan, std::size_t actor, int unit, std::vector<TrialDemand> item, Mode mode) const;
  // The unit of `actor` this item should join, -1 for none (a unit of its own).
  int joinable(const ActorPlan& actor, const std::vector<TrialDemand>& item) const;
  // `alone`: the item's own estimate as a new unit, when the caller has it already.
  bool fits(const ActorPlan& actor, int unit, const std::vector<TrialDemand>& item,
            const UnitEstimate* alone = nullptr) const;
  double unit_seconds(const PlannedUnit& unit, const std::string& device) const;
  static double total_steps(const std::vector<TrialDemand>& members);  // the members' steps
  Unplaced why_unplaced(const Plan& plan, const TrialDemand& trial) const;
  void balance(Plan& plan) const;

  // refresh without marking indices stale: for the planner's own changes, which it files.
  // `stale`: the one unit whose members changed (the others' figures are current), or
  // every unit, or none.
  static constexpr int kEveryUnit = -2, kNoUnit = -1;
  void derive(ActorPlan& actor, int stale = kEveryUnit) const;
  void refit(Plan& plan, std::size_t actor) const;  // derive, then file in the index
  // `before`: how the actor was filed last, whose unchanged units need not be priced again.
  PlanIndex::Filing filing(const ActorPlan& actor, const PlanIndex::Filing* before = nullptr) const;
  void index(Plan& plan) const;  // rebuilds plan.index unless it is current
  static PlanIndex::Bound bound(const TrialShape& shape);

  MemoryModel model_;
  PlanOptions options_;
  ThroughputModel throughput_;
  // device kind, shape key and FLOPs
  mutable std::map<std::tuple<std::string, std::string, std::int64_t>, int, std::less<>> useful_cache_;
  std::uint64_t id_;  // tells the plan indices it filed from those of other planners
};

}  // namespace packtune::packing
