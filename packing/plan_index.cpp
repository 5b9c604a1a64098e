#include "packing/plan_index.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>

namespace packtune::packing {
namespace {

// Process-wide, so that Planner::refresh(ActorPlan&), which cannot see the plan its actor
// belongs to, still reaches that plan's index.
std::atomic<std::uint64_t> generation{1};

bool dominates(const PlanIndex::Bound& unit, const PlanIndex::Bound& item) {
  return std::get<0>(item) <= std::get<0>(unit) && std::get<1>(item) <= std::get<1>(unit) &&
         std::get<2>(item) <= std::get<2>(unit) && std::get<3>(item) <= std::get<3>(unit) &&
         std::get<4>(item) <= std::get<4>(unit) && (!std::get<5>(item) || std::get<5>(unit)) &&
         (!std::get<6>(item) || std::get<6>(unit));
}

}  // namespace

void PlanIndex::invalidate_all() { generation.fetch_add(1, std::memory_order_relaxed); }

bool PlanIndex::tracks(std::size_t actors) const {
  return size_ == actors && generation_ == generation.load(std::memory_order_relaxed);
}

void PlanIndex::reset(std::size_t actors) {
  generation_ = generation.load(std::memory_order_relaxed);
  size_ = actors;
  filings_.assign(actors, Filing{});
  free_slots_ = 0;
  open_.clear();
  fusable_.clear();
  slot_of_.clear();
  planner = 0;
  any_member_slot = false;
  largest_room = 0;
}

void PlanIndex::unfile(std::size_t slot) {
  const auto& old = filings_[slot];
  free_slots_ -= old.free;
  if (old.open) open_[old.kind].erase({old.seconds, slot});
  for (const auto& u : old.units) {
    auto f = fusable_.find(u.key);
    if (f == fusable_.end()) continue;
    auto g = f->second.find(u.group);
    if (g == f->second.end()) continue;
    g->second.entries.erase({u.order, slot, u.id, u.scale});
    if (g->second.entries.empty()) f->second.erase(g);
  }
}

void PlanIndex::file(std::size_t slot, Filing filing) {
  unfile(slot);
  free_slots_ += filing.free;
  if (filing.open) open_[filing.kind].insert({filing.seconds, slot});
  for (const auto& u : filing.units) {
    auto& g = fusable_[u.key][u.group];
    if (g.entries.empty()) {
      g.full = u.full;
      g.bound = u.bound;
      g.per_member = u.per_member;
    }
    g.entries.insert({u.order, slot, u.id, u.scale});
  }
  filings_[slot] = std::move(filing);
}

const std::size_t* PlanIndex::slot_of(std::int64_t trial) const {
  auto it = slot_of_.find(trial);
  return it == slot_of_.end() ? nullptr : &it->second;
}

std::vector<std::size_t> PlanIndex::fusable(const std::string& key, const Bound& item) const {
  std::vector<std::size_t> slots;
  auto f = fusable_.find(key);
  if (f == fusable_.end()) return slots;
  for (const auto& [name, g] : f->second) {
    // A full unit whose figures the trial does not exceed keeps its shape and stays full.
    if (g.full && dominates(g.bound, item)) continue;
    for (const auto& e : g.entries) slots.push_back(e.slot);
  }
  std::sort(slots.begin(), slots.end());
  slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
  return slots;
}

PlanIndex::Joins PlanIndex::joins(const std::string& key, const Bound& item, double steps) const {
  Joins joins;
  joins.steps_ = steps;
  auto f = fusable_.find(key);
  if (f == fusable_.end()) return joins;
  for (const auto& [name, g] : f->second) {
    const bool same_shape = dominates(g.bound, item);
    if (g.full && same_shape) continue;
    const double per_member = same_shape ? g.per_member : std::numeric_limits<double>::quiet_NaN();
    joins.push({0, g.entries.begin(), g.entries.end(), per_member});
  }
  return joins;
}

void PlanIndex::Joins::push(Head head) {
  if (head.at == head.end) return;
  if (std::isnan(head.per_member)) {
    head.bound = -std::numeric_limits<double>::infinity();
  } else {
    // What the trial adds to a unit it leaves as it is: its steps at the per-member cost,
    // less what the members save per step. The margin covers the rounding of those terms.
    const double added = steps_ * head.per_member;
    head.bound = head.at->order + added - 1e-9 * (head.at->scale + added);
  }
  heads_.push_back(head);
  std::push_heap(heads_.begin(), heads_.end(), std::greater<Head>());
}

void PlanIndex::Joins::next() {
  std::pop_heap(heads_.begin(), heads_.end(), std::greater<Head>());
  auto head = heads_.back();
  heads_.pop_back();
  ++head.at;
  push(head);
}

}  // namespace packtune::packing
