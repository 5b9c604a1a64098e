#include "driver/admission.hpp"

#include <algorithm>
#include <cmath>

#include <spdlog/spdlog.h>

#include "protocol/metric_names.hpp"
#include "spec/checkpoint_name.hpp"
#include "util/printable.hpp"

namespace packtune {
namespace {

// Six significant digits in a file name, and budgets summed from steps.
bool at_most(double value, double top) { return value <= top + 1e-5 * std::max(1.0, std::abs(top)); }
bool near(double a, double b) { return std::abs(a - b) <= 1e-5 * std::max(1.0, std::abs(b)); }

}  // namespace

std::string Admission::metrics_refusal(const std::map<std::string, double>& metrics, bool test) {
  for (const auto& [name, value] : metrics) {
    if (name.size() > kMaxMetricName || !protocol::known_metric(name, test)) {
      return "unknown metric \"" + printable(name) + "\"" +
             (name.size() > kMaxMetricName ? " (" + std::to_string(name.size()) + " characters)" : "");
    }
    if (std::isinf(value)) return "metric " + name + " is infinite";
  }
  return "";
}

std::string Admission::budget_refusal(double budget, const Held& held) {
  const double top = std::max(held.job_budget, held.resume_budget);
  if (!std::isfinite(budget) || !(budget > 0) || !at_most(budget, top)) {
    return "budget " + std::to_string(budget) + " is outside trial " + std::to_string(held.trial) + "'s job (to " +
           std::to_string(top) + ")";
  }
  return "";
}

std::string Admission::offer_refusal(const protocol::Offer& offer, const Held& held, bool inside_jobs) {
  const auto parsed = spec::parse_checkpoint_name(offer.name);
  if (!parsed) return "not a checkpoint name: " + printable(offer.name);
  if (parsed->trial != held.trial) {
    return "trial " + std::to_string(parsed->trial) + " is not a trial this actor trains";
  }
  if (const auto why = budget_refusal(parsed->budget, held); !why.empty()) return why;
  if (!inside_jobs && !near(parsed->budget, held.job_budget) && !near(parsed->budget, held.resume_budget)) {
    return "budget " + std::to_string(parsed->budget) + " is not trial " + std::to_string(held.trial) +
           "'s job budget, and checkpoints inside jobs are off";
  }
  if (offer.size == 0 || offer.size > protocol::kMaxCheckpointBytes) {
    return "a checkpoint of " + std::to_string(offer.size) + " bytes (at most " +
           std::to_string(protocol::kMaxCheckpointBytes) + ")";
  }
  return "";
}

std::string Admission::printable(const std::string& text) { return util::printable(text, 160); }

void Admission::refused(const std::string& what, Clock::time_point now) {
  ++refusals_;
  if (now - window_start_ >= std::chrono::minutes(1)) {
    if (unlogged_ > 0) spdlog::warn("refused {} more message(s) from peers in the last minute, not logged", unlogged_);
    window_start_ = now;
    logged_ = 0;
    unlogged_ = 0;
  }
  if (logged_ < kLogsPerMinute) {
    ++logged_;
    spdlog::warn("refused: {}", what);
  } else {
    ++unlogged_;
  }
}

}  // namespace packtune
