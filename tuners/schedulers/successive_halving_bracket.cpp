#include "tuners/schedulers/successive_halving_bracket.hpp"

#include <algorithm>
#include <cmath>

#include "packtune/error.hpp"

namespace packtune::tuners {

SuccessiveHalvingBracket::SuccessiveHalvingBracket(Bracket plan, TrialId first_trial, Mode mode)
    : plan_(std::move(plan)), first_trial_(first_trial), mode_(mode) {
  if (plan_.rungs.empty()) {
    done_ = true;
    return;
  }
  for (std::int64_t i = 0; i < plan_.rungs[0].n; ++i) pending_.push_back(first_trial_ + i);
}

bool SuccessiveHalvingBracket::owns(TrialId trial) const {
  return !plan_.rungs.empty() && trial >= first_trial_ && trial < first_trial_ + plan_.rungs[0].n;
}

bool SuccessiveHalvingBracket::finished() const { return done_; }

Job SuccessiveHalvingBracket::next_job() {
  if (done_) return Job::finished();
  if (pending_.empty()) return Job::wait();
  const TrialId trial = pending_.front();
  pending_.pop_front();
  running_.insert(trial);
  const double budget = plan_.rungs[rung_].budget;
  return rung_ == 0 ? Job::start(trial, {}, budget) : Job::resume(trial, {}, budget);
}

void SuccessiveHalvingBracket::on_result(TrialId trial, double metric) {
  if (running_.erase(trial) == 0) {
    throw Error("successive halving: a result for trial " + std::to_string(trial) +
                ", which has no running job in its bracket");
  }
  results_.emplace_back(metric, trial);
  if (pending_.empty() && running_.empty()) promote();
}

void SuccessiveHalvingBracket::promote() {
  if (rung_ + 1 >= plan_.rungs.size()) {
    done_ = true;
    return;
  }
  std::sort(results_.begin(), results_.end(), [this](const auto& a, const auto& b) {
    return ranks_before(a.first, a.second, b.first, b.second, mode_);
  });
  // The plan already says floor(n_i / eta); a failed (NaN) trial never goes on.
  const auto quota = static_cast<std::size_t>(plan_.rungs[rung_ + 1].n);
  for (std::size_t i = 0; i < quota && i < results_.size() && !std::isnan(results_[i].first); ++i) {
    pending_.push_back(results_[i].second);
  }
  results_.clear();
  ++rung_;
  if (pending_.empty()) done_ = true;
}

}  // namespace packtune::tuners
