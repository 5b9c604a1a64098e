#include "actors/pack_executor.hpp"

#include <chrono>
#include <cmath>

#include "packtune/error.hpp"

namespace packtune::actors {

BudgetUnit parse_budget_unit(const std::string& text) {
  if (text == "epochs") return BudgetUnit::Epochs;
  if (text == "steps") return BudgetUnit::Steps;
  throw InputError("budget.unit: unknown unit \"" + text + "\"; expected epochs or steps");
}

std::string error_message(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) {
    return c10_error->what_without_backtrace();
  }
  return e.what();
}

PackExecutor::PackExecutor(datasets::BatchStream& stream, BudgetUnit unit)
    : stream_(stream), unit_(unit) {}

std::int64_t PackExecutor::steps_for(double budget, int batch_size) const {
  const double steps = unit_ == BudgetUnit::Steps
                           ? budget
                           : budget * static_cast<double>(stream_.steps_per_epoch(batch_size));
  return std::max<std::int64_t>(1, std::llround(steps));
}

void PackExecutor::add(const PackJob& job) {
  if (contains(job.trial)) {
    throw Error("trial " + std::to_string(job.trial) + " is already training on this actor");
  }
  Member m;
  m.job = job;
  m.runner = std::make_unique<TrialRunner>(job.trial, job.spec, job.seed, stream_);
  const std::int64_t last = steps_for(job.budget, job.spec.batch_size);
  if (job.report_every > 0) {
    for (int i = 1;; ++i) {
      const double b = job.report_every * i;
      if (b >= job.budget - 1e-9) break;
      const auto s = steps_for(b, job.spec.batch_size);
      if (s < last && (m.report_steps.empty() || s > m.report_steps.back())) {
        m.report_steps.push_back(s);
        m.report_budgets.push_back(b);
      }
    }
  }
  m.report_steps.push_back(last);
  m.report_budgets.push_back(job.budget);
  members_.push_back(std::move(m));
}

bool PackExecutor::contains(tuners::TrialId trial) const {
  for (const auto& m : members_) {
    if (m.job.trial == trial) return true;
  }
  return false;
}

bool PackExecutor::remove(tuners::TrialId trial) {
  for (auto it = members_.begin(); it != members_.end(); ++it) {
    if (it->job.trial == trial) {
      members_.erase(it);
      return true;
    }
  }
  return false;
}

std::vector<PackEvent> PackExecutor::step_round() {
  using Clock = std::chrono::steady_clock;
  std::vector<PackEvent> events;
  stream_.begin_round();
  for (auto& m : members_) {
    const auto start = Clock::now();
    try {
      m.runner->train_step(stream_);
    } catch (const std::exception& e) {
      // One member's failure (a bad shape, out of memory) must not take the pack down.
      PackEvent failed;
      failed.trial = m.job.trial;
      failed.final = true;
      failed.error = error_message(e);
      events.push_back(std::move(failed));
      continue;
    }
    const auto step = m.runner->step();
    if (step == m.report_steps[m.next_report]) {
      PackEvent e;
      e.trial = m.job.trial;
      e.final = m.next_report + 1 == m.report_steps.size();
      e.budget = m.report_budgets[m.next_report];
      e.metrics = m.runner->evaluate(stream_);
      ++m.next_report;
      m.seconds += std::chrono::duration<double>(Clock::now() - start).count();
      e.train_seconds = m.seconds;
      events.push_back(std::move(e));
    } else {
      m.seconds += std::chrono::duration<double>(Clock::now() - start).count();
    }
  }
  for (const auto& e : events) {
    if (e.final) remove(e.trial);
  }
  return events;
}

}  // namespace packtune::actors
