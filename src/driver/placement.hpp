#pragma once
// The dispatcher's books (docs/planner.md): the planner, the plan of the live actors and the
// units they train now, pbt's parked trials and the places they keep, and the units given jobs
// in the dispatch pass under way. It answers where a job goes and what leaves; it sends
// nothing and holds no queue. DriverCore's dispatch loop takes jobs from the tuner and the
// trial book, asks this where each goes, and sends what it answers (an Assign's unit, a Stop
// for each trial it lets go).
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "driver/parked_trials.hpp"
#include "driver/rung_replan.hpp"
#include "experiment/experiment_config.hpp"
#include "experiment/planner_setup.hpp"
#include "packing/planner.hpp"

namespace packtune {

class ActorRegistry;

class Placement {
 public:
  using TrialId = tuners::TrialId;
  // A parked trial freed from its place: the actor to tell (Stop) that it is no longer kept.
  using Released = std::vector<std::pair<TrialId, int>>;

  explicit Placement(const ExperimentConfig& config);

  // The throughput profiles (ProfileGate) record into the planner and refresh the plan's actors.
  packing::Planner& planner() { return planner_; }
  packing::Plan& plan() { return plan_; }
  const packing::Plan& plan() const { return plan_; }

  // --- the actors -------------------------------------------------------------------------
  // An actor got ready: the plan's actors catch up once, before the next pass (a thousand say
  // Ready at once, and each update goes over every actor).
  void actors_changed() { stale_ = true; }
  // The plan's actors become the registry's live ones; each keeps the units it trains now.
  void update_actors(const ActorRegistry& registry);
  void catch_up(const ActorRegistry& registry) {
    if (stale_) update_actors(registry);
  }
  // The line, once per kind of device, that says why its actors train one unit at a time
  // although max_pack allows more; empty when there is nothing to say.
  std::string explain_units(const std::string& device);

  // --- a dispatch pass --------------------------------------------------------------------
  void begin_pass() { units_started_.clear(); }
  // The trials the actors could start now: member slots as far as unit slots allow, and the
  // parked trials' places, which their next jobs take or which are freed for others.
  std::int64_t free_slots();
  // The actor for a new job, or nullopt with why (Planner::place).
  std::optional<int> place(const packing::TrialDemand& demand, packing::Unplaced* why);
  // A rung's promotions planned together (rung_replan.hpp).
  RungPlacement replan_rung(const std::vector<packing::TrialDemand>& demands);
  // The job of `trial` starts on `actor`, where the plan put it; `park`: its Assign keeps the
  // trial in its unit after the job (pbt).
  struct Started {
    std::string unit;    // the Assign's unit name
    bool solo = false;   // the planner made it a unit of one (Assign.max_fused 1)
  };
  Started start(int actor, TrialId trial, bool park);
  // The pass is over: parked trials whose unit was given jobs in it, none of them their own,
  // leave it so that the unit goes on (a unit steps only once none of its members is parked).
  Released end_pass();

  // --- jobs that end ----------------------------------------------------------------------
  // Whether the running job of `trial` parks it when it ends.
  bool parks(TrialId trial) const { return parked_.parks(trial); }
  // The job ended; `parked_on`: the actor that keeps the trial in its unit, else it leaves the plan.
  void ended(TrialId trial, std::optional<int> parked_on);
  // The unit of `trials` ran out of memory: the shape's figure doubles, and they leave the plan.
  void out_of_memory(const std::string& shape_key, const std::vector<TrialId>& trials);
  // A unit's measured peak; returns the memory model's figure before it.
  std::int64_t record_measurement(const packing::TrialShape& shape, int members, std::int64_t peak_bytes);

  // --- parked trials ----------------------------------------------------------------------
  const ParkedTrials& parked() const { return parked_; }
  struct Unparked {
    std::optional<int> in_place;  // the actor where the trial's next job goes on in its unit
    std::optional<int> released;  // the actor to tell it is no longer kept (another shape now)
  };
  // The next job of `trial`, of shape `shape_key`, is due; `actor_live`: the actor it is
  // parked on still trains. Unparked or not, the trial no longer holds a parked place after.
  Unparked unpark(TrialId trial, const std::string& shape_key, bool actor_live);
  // Parked trials with no job among `queued` leave their places to make room.
  Released release_unqueued(const std::set<TrialId>& queued);

 private:
  void release(TrialId trial);

  int max_pack_;                        // the config's
  packing::MixedPacks asked_mixed_packs_;  // the config's, as the user wrote it
  PlannerSetup setup_;  // the planner's options and actors' limits, as `packtune plan` has them
  packing::Planner planner_;
  packing::Plan plan_;
  ParkedTrials parked_;
  std::set<std::pair<int, std::string>> units_started_;  // (actor, unit) given a job in this pass
  std::set<std::string> explained_;                      // device kinds explain_units spoke of
  bool stale_ = false;  // an actor got ready since the plan's actors were updated
};

}  // namespace packtune
