#pragma once
// First fit for Planner::plan: the first opened actor in order that takes an item (a join
// before a new unit), else the roomiest closed one. The opened actors' rooms live in a
// RoomTree and the closed ones in a set by room, so each item costs O(log actors) instead of
// a try of each actor in turn. Internal to the planner (it reads the Planner's private
// estimates): included by planner.cpp only.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "packing/planner.hpp"
#include "packing/room_tree.hpp"

namespace packtune::packing {

class Planner::FirstFit {
 public:
  FirstFit(const Planner& planner, Plan& plan);

  // Where the item goes, as trying every opened actor in order, then the roomiest closed
  // one, would find it.
  std::optional<Candidate> find(const std::vector<TrialDemand>& item) const;

  // The actor took an item: it is open now, with less room.
  void took(std::size_t i);

 private:
  const Planner& planner_;
  Plan& plan_;
  std::vector<bool> opened_;
  RoomTree rooms_;  // the opened actors' rooms; a closed actor's is none
  std::set<std::pair<std::int64_t, std::size_t>> closed_;  // -usable, slot: the roomiest first
  std::int64_t min_base_ = 0;
};

}  // namespace packtune::packing
