#include "packing/first_fit.hpp"

#include <algorithm>

namespace packtune::packing {

Planner::FirstFit::FirstFit(const Planner& planner, Plan& plan)
    : planner_(planner), plan_(plan), opened_(plan.actors.size(), false), rooms_(plan.actors.size()) {
  for (std::size_t i = 0; i < plan.actors.size(); ++i) {
    const auto& spec = plan.actors[i].actor;
    closed_.insert({-planner_.usable(spec), i});
    min_base_ = std::min(min_base_, spec.base_bytes);
  }
}

std::optional<Planner::Candidate> Planner::FirstFit::find(const std::vector<TrialDemand>& item) const {
  const int k = static_cast<int>(item.size());
  const auto padded = padded_shape(item);
  const auto alone = planner_.model_.estimate(padded, k);
  std::size_t own = rooms_.first(0, k, alone);
  while (own < plan_.actors.size() && !planner_.fits(plan_.actors[own], -1, item, &alone)) {
    own = rooms_.first(own + 1, k, alone);
  }
  if (planner_.options_.fuse != FuseMode::Never) {
    // An actor in front of `own` that takes it only by joining a unit (a join comes first
    // on one actor too).
    for (auto i : plan_.index.fusable(fusion_key(padded), bound(padded))) {
      if (i > own) break;
      if (!opened_[i]) continue;
      const auto& a = plan_.actors[i];
      const int u = planner_.joinable(a, item);
      if (u >= 0 && planner_.fits(a, u, item)) return Candidate{i, u};
    }
  }
  if (own < plan_.actors.size()) return Candidate{own, -1};
  for (const auto& [negative_usable, i] : closed_) {
    // Ordered by room: past the first too small for the item even without a base, none fits.
    if (min_base_ >= 0 && -negative_usable < alone.peak()) break;
    if (planner_.fits(plan_.actors[i], -1, item, &alone)) return Candidate{i, -1};
  }
  return std::nullopt;
}

void Planner::FirstFit::took(std::size_t i) {
  if (!opened_[i]) {
    opened_[i] = true;
    closed_.erase({-planner_.usable(plan_.actors[i].actor), i});
  }
  const auto& a = plan_.actors[i];
  RoomTree::Room r;
  // A new unit needs a member slot and a unit slot; joins are found through the index.
  r.slots = static_cast<int>(a.units.size()) >= a.actor.max_units
                ? RoomTree::kNone
                : static_cast<std::int64_t>(a.actor.max_members) - a.members();
  if (a.actor.capacity_bytes <= 0) {
    r.free = r.beside = RoomTree::kUnbounded;
  } else {
    r.free = planner_.usable(a.actor) - a.actor.base_bytes - a.persistent_bytes;
    r.beside = r.free - a.largest_transient;
  }
  rooms_.set(i, r);
}

}  // namespace packtune::packing
