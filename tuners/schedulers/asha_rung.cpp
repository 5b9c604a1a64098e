#include "tuners/schedulers/asha_rung.hpp"

#include <algorithm>
#include <cmath>

#include "packtune/error.hpp"
#include "tuners/schedulers/brackets.hpp"

namespace packtune::tuners {

AshaRung::AshaRung(Mode mode, std::int64_t eta, bool eager)
    : eta_(eta), eager_(eager), top_(Order{mode}), promotable_(Order{mode}) {}

void AshaRung::push_rest(const Entry& e) {
  rest_.push_back(e);
  std::push_heap(rest_.begin(), rest_.end(), RanksAfter{top_.key_comp()});
}

void AshaRung::enter_top(const Entry& e) {
  top_.insert(e);
  if (promoted_.count(e.trial) == 0 && !std::isnan(e.metric)) promotable_.insert(e);
}

void AshaRung::leave_top(const Entry& e) {
  top_.erase(e);
  promotable_.erase(e);
  push_rest(e);
}

void AshaRung::add(TrialId trial, double metric) {
  if (!metrics_.emplace(trial, metric).second) {
    throw Error("asha: trial " + std::to_string(trial) + " reported twice at the same rung");
  }
  const Entry e{metric, trial};
  if (!top_.empty() && top_.key_comp()(e, *top_.rbegin())) {
    enter_top(e);
  } else {
    push_rest(e);
  }
  const std::int64_t floor_quota = promotion_quota(size(), eta_);
  const auto quota = static_cast<std::size_t>(eager_ ? std::max<std::int64_t>(floor_quota, 1) : floor_quota);
  while (top_.size() > quota) {
    const Entry worst = *top_.rbegin();  // a copy: leave_top erases the node
    leave_top(worst);
  }
  while (top_.size() < quota && !rest_.empty()) {
    std::pop_heap(rest_.begin(), rest_.end(), RanksAfter{top_.key_comp()});
    const Entry best = rest_.back();
    rest_.pop_back();
    enter_top(best);
  }
}

std::optional<AshaRung::Entry> AshaRung::best_promotable() const {
  if (promotable_.empty()) return std::nullopt;
  return *promotable_.begin();
}

void AshaRung::mark_promoted(TrialId trial) {
  promoted_.insert(trial);
  promotable_.erase(entry(trial));
}

bool AshaRung::in_top(TrialId trial) const { return top_.count(entry(trial)) > 0; }

}  // namespace packtune::tuners
