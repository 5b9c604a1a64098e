// DriverCore: what a user sees of a run and how it ends: the status snapshot, the test of the
// best trial on the test split, the checkpoints kept at the end, and the summary.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include <spdlog/spdlog.h>

#include "driver/driver_core.hpp"
#include "experiment/results_folder.hpp"
#include "protocol/metric_names.hpp"
#include "tuners/trial_config.hpp"

namespace packtune {

namespace proto = protocol;

// What the status display shows (docs/status.md).
StatusSnapshot DriverCore::status(Clock::time_point now) const {
  StatusSnapshot s;
  s.experiment = config_.name;
  s.tuner = config_.tuner;
  s.metric = config_.metric;
  s.elapsed_seconds = std::chrono::duration<double>(now - start_).count();
  s.jobs_done = book_.completed_jobs();
  s.failed = book_.failed_trials();
  std::set<TrialId> queued;
  for (const auto& job : book_.queue()) queued.insert(job.trial);
  std::map<double, StatusSnapshot::Rung> rungs;
  double done = 0;  // budget trained so far, as the tuner's plan counts it
  for (const auto& [id, trial] : book_.trials()) {
    done += trial.reached;
    if (trial.job_budget > 0) rungs[trial.job_budget].budget = trial.job_budget;
    if (trial.actor >= 0) {
      ++s.running;
      ++rungs[trial.job_budget].running;
    } else if (trial.failed) {
      continue;
    } else if (queued.erase(id) > 0 || trial.job_budget == 0) {
      ++s.queued;  // in the queue, or held until its shape's throughput is profiled
    } else {
      (trial.reached >= config_.max_budget * (1 - 1e-9) ? s.finished : s.paused) += 1;
    }
  }
  s.queued += static_cast<int>(queued.size());  // jobs of trials not opened yet
  for (auto& [budget, rung] : rungs) {
    for (const auto& [id, trial] : book_.trials()) rung.reached += trial.reached >= budget * (1 - 1e-9);
    s.rungs.push_back(rung);
  }
  const auto planned = tuning_.planned_budget();
  if (planned && done > 0) s.remaining_seconds = s.elapsed_seconds * std::max(0.0, *planned - done) / done;
  if (const auto& best = results_->best()) {
    s.best = StatusSnapshot::Best{best->trial, best->value, best->budget, tuners::to_json(best->config).dump()};
  }
  std::map<int, const packing::ActorPlan*> plans;
  for (const auto& a : placement_.plan().actors) plans[a.actor.id] = &a;
  for (const auto& [identity, actor] : registry_.actors()) {
    StatusSnapshot::Actor a;
    a.id = actor.id;
    a.host = actor.host;
    a.device = actor.device;
    a.live = !actor.dead;
    a.capacity_bytes = actor.capacity_bytes;
    if (auto it = plans.find(actor.id); it != plans.end()) {
      a.memory_bytes = it->second->estimated_bytes;
      for (const auto& unit : it->second->units) {
        std::vector<TrialId> trials;
        for (const auto& m : unit.members) trials.push_back(m.trial);
        if (!trials.empty()) a.units.push_back(std::move(trials));
      }
    }
    s.actors.push_back(std::move(a));
  }
  std::sort(s.actors.begin(), s.actors.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return s;
}

// --- the test split (docs/checkpoints.md, Final models) ----------------------------------------

// A trial that finished at the max budget wrote its final model, for the test at the end. Only
// the best few finished trials (FinalModels), and the best report's trial, keep theirs.
void DriverCore::on_final_checkpoint(TrialId id, double budget) {
  if (config_.keep_checkpoints == KeepCheckpoints::All || budget < config_.max_budget * (1 - 1e-9)) return;
  const auto out = final_models_.finished(id, book_.at(id).last_metric);
  const auto& best = results_->best();
  if (out && (!best || best->trial != *out)) store_->drop(*out);
}

// Once the tuner is done, before the actors stop, the best trial's final model is evaluated
// on the test split by one actor, for best.json and the summary.
bool DriverCore::test_wanted() {
  const auto& best = results_->best();
  if (!config_.evaluate_test || !best) return false;
  if (store_->newest_first(best->trial).empty()) {
    spdlog::warn("no test accuracy: trial {} has no checkpoint (a job stopped early writes none)", best->trial);
    return false;
  }
  return true;
}

bool DriverCore::ask_next_tester(Clock::time_point now) {
  now_ = now;
  const auto& best = results_->best();
  const TrialState& trial = book_.at(best->trial);
  const auto tester = final_test_.ask_next(registry_, best->trial);
  if (!tester) return false;
  send(*registry_.actor_by_id(*tester),
       proto::Test{best->trial, *trial.full, trial.seed, store_->newest_first(best->trial), trial.spec});
  spdlog::info("actor {} evaluates trial {}'s final model on the test split", *tester, best->trial);
  return true;
}

bool DriverCore::tester_lost() const { return final_test_.lost(registry_); }

int DriverCore::record_test() {
  const auto answer = final_test_.take_answer();
  if (!answer.error.empty()) {
    spdlog::warn("no test accuracy for trial {}: {}", answer.trial, answer.error);
    return 0;
  }
  nlohmann::json test = {{"trial", answer.trial}, {"budget", answer.budget}};
  for (const auto& [name, value] : answer.metrics) test[name] = value;
  results_->set_test(test);
  return 0;
}

// The checkpoint stays, and --resume runs the test again.
int DriverCore::test_unanswered(bool interrupted) {
  final_test_.give_up();
  const auto trial = results_->best()->trial;
  if (interrupted) {
    spdlog::warn("interrupted during the test of trial {}: every job is done, only the test remains; run it "
                 "with `packtune run --resume {}`", trial, options_.out_dir);
    return 130;
  }
  spdlog::error("no test accuracy for trial {}: no actor answered; every job is done, only the test remains; "
                "run it with `packtune run --resume {}`", trial, options_.out_dir);
  return 1;
}

// --- the end ------------------------------------------------------------------------------------

// At the end nothing can be promoted any more: the store keeps the best trials' newest
// checkpoints (all of them with --keep-checkpoints all). A run that stopped early (a signal,
// an error) keeps every one: `--resume` promotes from them. Reports disk use.
void DriverCore::finish_checkpoints(bool finished) {
  const auto& best = results_->best();
  const auto usage = finished ? store_->finish(kKeepBestCheckpoints,
                                               [this](TrialId a, TrialId b) {
                                                 return tuners::ranks_before(book_.at(a).last_metric, a,
                                                                             book_.at(b).last_metric, b, config_.mode);
                                               },
                                               best ? best->trial : -1)
                              : store_->usage();
  std::printf("checkpoints: %lld file(s), %.1f MiB in %s (keep %s; %d deleted%s)\n",
              static_cast<long long>(usage.files), static_cast<double>(usage.bytes) / (1 << 20),
              store_->dir().c_str(), to_string(config_.keep_checkpoints).c_str(), usage.deleted,
              finished ? "" : "; all kept for --resume");
}

void DriverCore::summarize(bool finished, bool report_written, Clock::time_point now) {
  now_ = now;
  const auto& best = results_->best();
  finish_checkpoints(finished);
  if (profiles_.measured() + profiles_.from_cache() > 0) {
    const auto file = profiles_.cache_file();
    spdlog::info("throughput profiles: {} measured, {} from the cache{}", profiles_.measured(), profiles_.from_cache(),
                 file.empty() ? " (none kept)" : " " + file);
  }
  std::printf("%s %s in %.1f s: %lld jobs, %d failed trials; results in %s\n", finished ? "finished" : "stopped",
              config_.name.c_str(), seconds_since_start(), static_cast<long long>(book_.completed_jobs()),
              book_.failed_trials(), options_.out_dir.c_str());
  if (report_written) {
    std::printf("charts: %s\n", results_folder::path(options_.out_dir, results_folder::kReport).c_str());
  }
  if (refused_reports_ > 0) {
    std::printf("%lld report(s) from actors retired after a partition were refused\n",
                static_cast<long long>(refused_reports_));
  }
  if (best) {
    std::printf("best trial %lld: %s = %.4f at budget %g\n  config: %s\n", static_cast<long long>(best->trial),
                config_.metric.c_str(), best->value, best->budget, tuners::to_json(best->config).dump().c_str());
    if (const auto& test = results_->test(); !test.is_null() && test.contains("test_loss")) {
      std::string figures;
      for (const auto& name : protocol::reported_metrics(config_.data.task, true)) {
        if (!test.contains(name)) continue;
        figures += fmt::format("{}{} = {:.4f}", figures.empty() ? "" : ", ", name, test[name].get<double>());
      }
      std::printf("  test: %s (its final model, at budget %g, on the test split that selection never saw)\n",
                  figures.c_str(), test["budget"].get<double>());
    }
  } else {
    std::printf("no trial reported %s\n", config_.metric.c_str());
  }
  std::fflush(stdout);
}

}  // namespace packtune
