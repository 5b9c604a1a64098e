#include "tuners/simulate/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <queue>
#include <unordered_map>
#include <vector>

#include "packtune/error.hpp"
#include "tuners/job_rules.hpp"
#include "tuners/tuner_settings.hpp"

namespace packtune::tuners {
namespace {

struct TrialRecord {
  std::int64_t index = 0;  // creation order, what a table objective is keyed by
  TrialConfig config;
  double trained = 0;
};

struct RunningJob {
  TrialId trial = -1;
  double from = 0;
  double to = 0;
  double start_time = 0;
  double point = 0;  // the budget of the job's next report or of its end
  std::uint64_t order = 0;  // start order: ties complete in the order the jobs started
  Evaluation end;           // the final budget's answer, asked for when the job started
};

struct Wakeup {
  double time;
  std::uint64_t order;
  std::size_t slot;
  bool operator>(const Wakeup& o) const {
    return time != o.time ? time > o.time : order > o.order;
  }
};

}  // namespace

Simulator::Simulator(Tuner& tuner, Objective& objective, Mode mode, SimulationOptions options)
    : tuner_(tuner), objective_(objective), mode_(mode), options_(options) {
  if (options_.workers < 1) {
    throw InputError("--workers: expected at least 1 simulated worker, got " +
                     std::to_string(options_.workers));
  }
  if (!std::isfinite(options_.report_every) || options_.report_every < 0) {
    throw InputError("--report-every: expected a budget >= 0 (0: no intermediate reports)");
  }
}

SimulationSummary Simulator::run(const std::function<void(const SimulationEvent&)>& on_event) {
  SimulationSummary summary;
  summary.tuner = tuner_.name();
  std::unordered_map<TrialId, TrialRecord> trials;
  JobRules rules(summary.tuner, options_.max_budget);
  std::vector<RunningJob> slots(static_cast<std::size_t>(options_.workers));
  std::vector<std::size_t> free_slots;
  for (std::size_t i = slots.size(); i-- > 0;) free_slots.push_back(i);
  std::priority_queue<Wakeup, std::vector<Wakeup>, std::greater<>> queue;
  std::uint64_t started = 0;
  double now = 0;
  bool finished = false;

  const auto emit = [&](const SimulationEvent& e) {
    if (on_event) on_event(e);
  };
  const auto next_point = [&](const RunningJob& job, double after) {
    const double point = after + options_.report_every;
    return options_.report_every > 0 && !budget_reaches(point, job.to) ? point : job.to;
  };
  const auto schedule = [&](std::size_t slot) {
    const auto& job = slots[slot];
    // Without a cost the budget is the time, as a plain difference: a fraction of a duration
    // would round, and table runs keep exact times (3 + 6 is 9).
    double elapsed = job.point - job.from;
    if (job.end.cost) {
      elapsed = job.point < job.to ? *job.end.cost * ((job.point - job.from) / (job.to - job.from)) : *job.end.cost;
    }
    queue.push({job.start_time + elapsed, job.order, slot});
  };

  const auto launch = [&](Job job) {
    const bool resume = job.kind == Job::Kind::Resume;
    rules.check(job);
    auto it = trials.find(job.trial);
    if (!resume) {
      it = trials.emplace(job.trial, TrialRecord{summary.trials++, std::move(job.config), 0}).first;
    }
    auto& record = it->second;
    if (job.from_trial >= 0) {
      // An exploit: the trial goes on from the other's checkpoint, with the config it was given.
      record.trained = job.from_budget;
      record.config = job.config;
    }
    ++summary.jobs;
    const std::size_t slot = free_slots.back();
    free_slots.pop_back();
    auto& running = slots[slot];
    running = {job.trial, record.trained, std::max(job.budget, record.trained), now, 0, started++, {}};
    running.point = next_point(running, running.from);
    SimulationEvent start{SimulationEvent::Kind::Start, job.trial, running.to, 0, now, resume, false};
    if (job.from_trial >= 0) {
      start.from_trial = job.from_trial;
      start.from_budget = job.from_budget;
      start.config = record.config;
    }
    emit(start);
    running.end = objective_.evaluate_from(record.index, record.config, running.from, running.to);
    if (running.end.cost && !(std::isfinite(*running.end.cost) && *running.end.cost >= 0)) {
      throw Error("objective " + objective_.description() + ": cost " + number_text(*running.end.cost) +
                  " for trial " + std::to_string(job.trial) + " at budget " + number_text(running.to) +
                  "; a cost is simulated seconds, finite and >= 0");
    }
    schedule(slot);
  };

  const auto fill = [&] {
    while (!free_slots.empty() && !finished) {
      Job job = tuner_.next_job();
      if (job.kind == Job::Kind::Wait) return;
      if (job.kind == Job::Kind::Finished) {
        finished = true;
        return;
      }
      launch(std::move(job));
    }
  };

  const auto complete = [&](std::size_t slot, double budget, double metric, bool stopped) {
    const RunningJob job = slots[slot];
    auto& record = trials.at(job.trial);
    record.trained = budget;
    rules.result(job.trial, budget);
    summary.total_budget += budget - job.from;
    summary.time = now;
    summary.stopped += stopped ? 1 : 0;
    free_slots.push_back(slot);
    const bool higher = budget > summary.best_budget && !budget_reaches(summary.best_budget, budget);
    const bool same = !higher && budget_reaches(budget, summary.best_budget);
    if (summary.best_trial < 0 || higher ||
        (same && ranks_before(metric, job.trial, summary.best_metric, summary.best_trial, mode_))) {
      summary.best_trial = job.trial;
      summary.best_metric = metric;
      summary.best_budget = budget;
      summary.best_config = record.config;
    }
    emit({SimulationEvent::Kind::Result, job.trial, budget, metric, now, false, stopped});
    tuner_.on_result(job.trial, budget, metric);
  };

  fill();
  while (!queue.empty()) {
    const Wakeup wake = queue.top();
    queue.pop();
    now = wake.time;
    auto& job = slots[wake.slot];
    if (job.point < job.to) {
      const auto& record = trials.at(job.trial);
      const double metric = objective_.evaluate_from(record.index, record.config, job.from, job.point).metric;
      if (tuner_.on_report(job.trial, job.point, metric) == Decision::Stop) {
        complete(wake.slot, job.point, metric, true);
        fill();
      } else {
        job.point = next_point(job, job.point);
        schedule(wake.slot);
      }
      continue;
    }
    complete(wake.slot, job.to, job.end.metric, false);
    fill();
  }
  if (!finished) rules.check_wait();
  return summary;
}

}  // namespace packtune::tuners
