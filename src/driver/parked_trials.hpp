#pragma once
// Population-based training's parked trials (protocol::Assign::park): a job whose Assign parks
// its trial leaves the trial in its unit on its actor when it ends, so that the trial's next
// job goes on in place, from the rows the actor holds. These are the books of which running
// jobs park their trials and where each parked trial sits. No planner: DriverCore keeps a
// parked trial's place in the plan, and frees it (Stop) when the unit goes on without it or
// another job needs the room.
#include <cstddef>
#include <map>
#include <optional>
#include <set>

#include "tuners/tuner.hpp"

namespace packtune {

class ParkedTrials {
 public:
  using TrialId = tuners::TrialId;

  // A job of `trial` was assigned; `park`: its Assign keeps the trial in its unit after it.
  void assigned(TrialId trial, bool park);
  // Whether the running job of `trial` parks it when it ends.
  bool parks(TrialId trial) const { return parking_.count(trial) > 0; }
  // The job of `trial` ended; `actor`: where the trial is parked now, or nullopt when it is
  // not (its Assign did not park it, it failed, or its actor is gone).
  void ended(TrialId trial, std::optional<int> actor);
  // The actor `trial` is parked on; nullopt when it is not parked.
  std::optional<int> actor_of(TrialId trial) const;
  // The trial leaves its place: its next job took it, or it was freed.
  void unpark(TrialId trial) { parked_.erase(trial); }
  bool empty() const { return parked_.empty(); }
  std::size_t size() const { return parked_.size(); }
  // Every parked trial and its actor, in trial order.
  const std::map<TrialId, int>& all() const { return parked_; }

 private:
  std::set<TrialId> parking_;     // running jobs whose Assign parks their trial
  std::map<TrialId, int> parked_;  // parked trials and their actors
};

}  // namespace packtune
