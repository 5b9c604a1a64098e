#pragma once
// Re-planning at a rung boundary (docs/planner.md, Re-planning at rung boundaries). When the
// tuner promotes a set of trials at once (a synchronous Hyperband or SHA rung that has all
// its results), the driver plans them together with Planner::replan instead of one by one as
// the tuner hands them out: trials of one architecture come in together, widest first, so
// they form fused units with each other (the Pack paper repacks its survivors the same way).
//
// Trials move only at rung boundaries: a job already running stays on its actor and in its
// unit. Planner::replan may evict running units from an actor whose corrected memory figure
// is over capacity; the driver cannot move a running job, so then the promoted trials are
// placed one by one (Planner::place) and nothing running moves. No sockets, no tuner: the
// driver sends the Assigns for what this placed.
#include <cstdint>
#include <vector>

#include "packing/planner.hpp"

namespace packtune {

struct RungPlacement {
  struct Placed {
    std::int64_t trial = -1;
    int actor = -1;  // ActorSpec::id
  };
  // Placed in the plan, in the order their jobs should start (the planning order).
  std::vector<Placed> placed;
  // No room now (or none ever: the driver's usual placement says which): they wait at the
  // front of the queue, in this order, and go out as room frees.
  std::vector<std::int64_t> waiting;
  // False: Planner::replan would have moved a running trial, so the promoted trials were
  // placed one by one instead.
  bool replanned = true;
  int units = 0;   // the units the placed trials train in
  int actors = 0;  // the actors that hold them
};

// The order in which promoted trials are planned: grouped by fusion key (in the order each
// key first appears), widest first within a key, so that neighbours in width share a unit and
// pad least. Stable: equal trials keep the tuner's order.
std::vector<packing::TrialDemand> planning_order(std::vector<packing::TrialDemand> promoted);

// Plans `promoted` (trials that are in no job now) into `plan`, which holds the running jobs;
// none of those moves. `plan.unplaced` is left empty: what finds no room is in `waiting`.
RungPlacement replan_rung(const packing::Planner& planner, packing::Plan& plan,
                          const std::vector<packing::TrialDemand>& promoted);

}  // namespace packtune
