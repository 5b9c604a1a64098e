#include "driver/trial_book.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "packtune/error.hpp"

namespace packtune {
namespace {

// Each trial's seed from the experiment's (splitmix64): independent of the order trials run in.
std::uint64_t trial_seed(std::uint64_t experiment_seed, tuners::TrialId trial) {
  std::uint64_t x = experiment_seed * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(trial) + 1;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

TrialBook::TrialBook(tuners::TrialConfig model, std::uint64_t seed, Describe describe, Limits limits)
    : model_(std::move(model)), seed_(seed), describe_(std::move(describe)), limits_(limits) {}

bool TrialBook::move_to_front(const std::set<TrialId>& trials) {
  const auto chosen = [&](const Job& job) { return trials.count(job.trial) > 0; };
  const auto first_other = std::find_if_not(queue_.begin(), queue_.end(), chosen);
  if (std::find_if(first_other, queue_.end(), chosen) == queue_.end()) return false;
  std::stable_partition(queue_.begin(), queue_.end(), chosen);
  return true;
}

TrialBook::Job TrialBook::take_next() {
  Job job = std::move(queue_.front());
  queue_.pop_front();
  return job;
}

bool TrialBook::make(const Job& job, TrialState*& out, std::string& why) {
  auto [it, fresh] = trials_.try_emplace(job.trial);
  TrialState& trial = it->second;
  out = &trial;
  if (!fresh) return true;
  trial.seed = trial_seed(seed_, job.trial);
  return configure(trial, job.config, why);
}

bool TrialBook::configure(TrialState& trial, const tuners::TrialConfig& config, std::string& why) {
  auto full = model_;
  for (const auto& [k, v] : config) full[k] = v;
  try {
    auto described = describe_(full);
    trial.spec = std::move(described.spec);
    trial.shape = std::move(described.shape);
  } catch (const InputError& e) {
    why = std::string("has an invalid config: ") + e.what();
    return false;
  }
  trial.sampled = config;
  trial.full = std::make_shared<const tuners::TrialConfig>(std::move(full));
  return true;
}

bool TrialBook::retarget(TrialId id, const tuners::TrialConfig& config, std::string& why) {
  return configure(trials_.at(id), config, why);
}

TrialBook::Opened TrialBook::open_next() {
  TrialState* trial = nullptr;
  std::string why;
  if (make(queue_.front(), trial, why)) return {trial, std::nullopt};
  const auto id = queue_.front().trial;
  queue_.pop_front();
  return {nullptr, give_up(id, why)};
}

TrialState* TrialBook::remember(const Job& job) {
  TrialState* trial = nullptr;
  std::string why;
  return make(job, trial, why) ? trial : nullptr;
}

TrialBook::Job TrialBook::start_next(int actor) {
  Job job = take_next();
  TrialState& trial = trials_.at(job.trial);
  if (trial.actor < 0) ++running_;
  trial.actor = actor;
  trial.job_budget = job.budget;
  trial.reached = 0;
  trial.lease = ++next_lease_;
  return job;
}

TrialState* TrialBook::running_on(TrialId id, int actor, std::uint64_t lease) {
  TrialState* trial = running_on(id, actor);
  return trial && trial->lease == lease ? trial : nullptr;
}

TrialState* TrialBook::running_on(TrialId id, int actor) {
  auto t = trials_.find(id);
  return t == trials_.end() || t->second.actor != actor ? nullptr : &t->second;
}

TrialState& TrialBook::finish(TrialId id, bool failed) {
  TrialState& trial = trials_.at(id);
  if (failed) {
    ++failed_trials_;
    trial.failed = true;
    trial.last_metric = std::numeric_limits<double>::quiet_NaN();
  }
  leave_actor(trial);
  ++completed_jobs_;
  return trial;
}

std::optional<TrialBook::Failure> TrialBook::lost_actor(TrialId id, std::optional<double> checkpoint) {
  TrialState& trial = trials_.at(id);
  leave_actor(trial);
  if (++trial.restarts > limits_.max_restarts) {
    return give_up(id, "lost its actor " + std::to_string(trial.restarts) + " times");
  }
  spdlog::warn("trial {} goes back to the queue (restart {} of {}){}", id, trial.restarts, limits_.max_restarts,
               !checkpoint ? "" : fmt::format(" and resumes from its checkpoint at budget {:g}", *checkpoint));
  requeue(id, trial, checkpoint.has_value());
  return std::nullopt;
}

std::optional<TrialBook::Failure> TrialBook::out_of_memory(TrialId id, std::optional<double> checkpoint) {
  TrialState& trial = trials_.at(id);
  leave_actor(trial);
  if (++trial.out_of_memory > limits_.max_out_of_memory) {
    return give_up(id, "ran out of memory " + std::to_string(trial.out_of_memory) + " times");
  }
  requeue(id, trial, checkpoint.has_value());
  return std::nullopt;
}

// Next in line: from its last checkpoint when it has one, else from scratch.
void TrialBook::requeue(TrialId id, const TrialState& trial, bool from_checkpoint) {
  queue_.push_front({from_checkpoint ? Job::Kind::Resume : Job::Kind::Start, id, trial.sampled, trial.job_budget});
}

TrialBook::Failure TrialBook::give_up(TrialId id, const std::string& why) {
  spdlog::warn("trial {} {}; counting it as failed", id, why);
  last_failure_ = "trial " + std::to_string(id) + " " + why;
  ++failed_trials_;
  ++completed_jobs_;
  trials_.at(id).failed = true;
  return {id, trials_.at(id).reached};
}

void TrialBook::leave_actor(TrialState& trial) {
  if (trial.actor >= 0) --running_;
  trial.actor = -1;
}

}  // namespace packtune
