#pragma once
// The planner as it was before its indices (commit fcf400e): every search a scan over all
// actors in order. Kept as the oracle that the indexed Planner must agree with, placement
// for placement; it borrows the Planner's unchanged pieces (fits, joinable, the models).
#include <optional>
#include <vector>

#include "packing/planner.hpp"

namespace packtune::packing {

class ReferencePlanner {
 public:
  explicit ReferencePlanner(const Planner& planner) : p_(planner) {}

  Plan plan(const std::vector<ActorSpec>& actors, const std::vector<TrialDemand>& trials) const;
  int replan(Plan& plan, const std::vector<std::int64_t>& leaving, const std::vector<TrialDemand>& arriving) const;
  std::optional<int> place(Plan& plan, const TrialDemand& trial, Unplaced* why = nullptr) const;
  bool remove(Plan& plan, std::int64_t trial) const;
  int remove(Plan& plan, const std::vector<std::int64_t>& trials) const;
  static const PlannedUnit* unit_of(const Plan& plan, std::int64_t trial);

 private:
  enum class Policy { FirstFit, LeastLoaded };
  using Candidate = Planner::Candidate;
  std::optional<Candidate> find_room(const Plan& plan, const std::vector<TrialDemand>& item, Policy policy,
                                     const std::vector<bool>* opened) const;
  void add(Plan& plan, std::size_t actor, int unit, std::vector<TrialDemand> item) const;
  void balance(Plan& plan) const;

  const Planner& p_;
};

}  // namespace packtune::packing
