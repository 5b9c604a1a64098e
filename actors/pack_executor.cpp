#include "actors/pack_executor.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include "actors/memory_meter.hpp"
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

PackExecutor::PackExecutor(datasets::BatchStream& stream, BudgetUnit unit, bool fuse)
    : stream_(stream), unit_(unit), fuse_(fuse), streams_(stream.device()) {}

std::int64_t PackExecutor::steps_for(double budget, int batch_size) const {
  const double steps = unit_ == BudgetUnit::Steps
                           ? budget
                           : budget * static_cast<double>(stream_.steps_per_epoch(batch_size));
  return std::max<std::int64_t>(1, std::llround(steps));
}

spec::ScheduleSteps PackExecutor::schedule_steps(const PackJob& job) const {
  const auto& s = job.spec.optimizer.schedule;
  if (s.constant()) return {};
  const int batch = job.spec.batch_size;
  auto steps = [&](double budget) { return budget > 0 ? steps_for(budget, batch) : 0; };
  return {steps(job.max_budget > 0 ? job.max_budget : job.budget), steps(s.warmup), steps(s.step_every)};
}

void PackExecutor::add(const PackJob& job) {
  if (contains(job.trial)) {
    throw Error("trial " + std::to_string(job.trial) + " is already training on this actor");
  }
  Member m;
  m.job = job;
  const TrialCheckpoint* resume = job.resume.get();
  const std::int64_t start = resume ? resume->step : 0;
  const std::int64_t last = steps_for(job.budget, job.spec.batch_size);
  if (resume) m.history = resume->metrics.is_array() ? resume->metrics : nlohmann::json::array();
  if (resume && last <= start) {
    // Promoted to a budget it has already reached: nothing to train, report what it has.
    PackEvent e;
    e.trial = job.trial;
    e.budget = resume->budget;
    e.final = true;
    if (!m.history.empty()) {
      for (const auto& [name, value] : m.history.back().items()) {
        if (value.is_number() && name != "budget" && name != "step") e.metrics[name] = value.get<double>();
      }
    }
    if (job.checkpoint) e.checkpoint = std::make_shared<TrialCheckpoint>(*resume);
    finished_.push_back(std::move(e));
    return;
  }
  {
    // A trial alone trains as a fused group of one: the same batched kernels as a member of a
    // unit of its widths, so its numbers do not depend on whether, or with whom, it is packed.
    // With fuse off, every trial is alone, as is every trial of a model that never fuses.
    const auto key = spec::fusion_key(job.spec);
    auto it = groups_.end();
    if (job.max_fused == 1 || !fuse_ || !spec::fuses(job.spec.model)) {
      m.group = "solo:" + std::to_string(job.trial);
    } else if (!job.unit.empty()) {
      m.group = "unit:" + job.unit;
      it = groups_.find(m.group);
      if (it != groups_.end() && it->second->key() != key) {
        throw InputError("trial " + std::to_string(job.trial) + " cannot join fused unit " + job.unit + ": its layers (" +
                         key + ") differ from the unit's (" + it->second->key() + "); plan units by fusion_key");
      }
    } else {
      // The first group of its fusion key with room; the planner sized units with that rule.
      for (it = groups_.begin(); it != groups_.end(); ++it) {
        if (it->first.rfind("unit:", 0) != 0 && it->first.rfind("solo:", 0) != 0 && it->second->key() == key &&
            (job.max_fused <= 0 || it->second->size() < job.max_fused)) {
          break;
        }
      }
      m.group = it == groups_.end() ? key + "#" + std::to_string(next_group_++) : it->first;
    }
    if (it == groups_.end()) {
      // Built outside the map first: a spec that fails here leaves no empty group behind.
      const auto shape = input_shape(stream_);
      auto group = std::make_unique<FusedGroup>(job.spec, shape, stream_.device());
      group->add(job.trial, job.spec, job.seed, resume, schedule_steps(job));
      groups_.emplace(m.group, std::move(group));
    } else {
      m.group = it->first;
      it->second->add(job.trial, job.spec, job.seed, resume, schedule_steps(job));
    }
  }
  m.waiting = true;
  m.start_step = start;
  schedule(m, start);
  members_.push_back(std::move(m));
}

void PackExecutor::schedule(Member& m, std::int64_t start) const {
  const auto& job = m.job;
  const std::int64_t last = steps_for(job.budget, job.spec.batch_size);
  m.report_steps.clear();
  m.report_budgets.clear();
  m.next_report = 0;
  if (job.report_every > 0) {
    for (int i = 1;; ++i) {
      const double b = job.report_every * i;
      if (b >= job.budget - 1e-9) break;
      const auto s = steps_for(b, job.spec.batch_size);
      if (s > start && s < last && (m.report_steps.empty() || s > m.report_steps.back())) {
        m.report_steps.push_back(s);
        m.report_budgets.push_back(b);
      }
    }
  }
  m.report_steps.push_back(last);
  m.report_budgets.push_back(job.budget);
}

PackExecutor::Member* PackExecutor::find(tuners::TrialId trial) {
  for (auto& m : members_) {
    if (m.job.trial == trial) return &m;
  }
  return nullptr;
}

bool PackExecutor::parked(tuners::TrialId trial) const {
  for (const auto& m : members_) {
    if (m.job.trial == trial) return m.parked;
  }
  return false;
}

bool PackExecutor::continue_parked(const PackJob& job, tuners::TrialId from, double budget) {
  Member* m = find(job.trial);
  if (!m || !m->parked) return false;
  const auto same_budget = [&](double b) { return std::abs(b - budget) <= 1e-9 * std::max(1.0, budget); };
  const std::string named = group_of(job);
  const std::string group = named.empty() ? m->group : named;
  auto& fused = *groups_.at(m->group);
  bool fits = group == m->group && spec::fusion_key(job.spec) == fused.key() && (from < 0 || from != job.trial);
  const Member* donor = nullptr;
  if (fits && from >= 0) {
    for (const auto& d : members_) {
      if (d.job.trial == from && d.group == m->group && d.park_step >= 0 && step_of(d) == d.park_step &&
          same_budget(d.park_budget)) {
        donor = &d;
      }
    }
    fits = donor != nullptr;
  } else if (fits) {
    fits = same_budget(m->job.budget) && job.config == m->job.config && job.seed == m->job.seed;
  }
  if (!fits) {
    remove(job.trial);
    return false;
  }
  if (donor) {
    try {
      fused.exploit(job.trial, from, job.spec);
    } catch (const std::exception&) {
      remove(job.trial);  // the checkpoint's path says why, to the driver
      return false;
    }
    m->history = donor->history;
  }
  m->seconds = 0;
  m->start_step = step_of(*m);
  m->job = job;
  m->parked = false;
  m->waiting = true;
  schedule(*m, m->start_step);
  return true;
}

std::string PackExecutor::group_of(const PackJob& job) const {
  if (job.max_fused == 1 || !fuse_ || !spec::fuses(job.spec.model)) return "solo:" + std::to_string(job.trial);
  return job.unit.empty() ? std::string() : "unit:" + job.unit;
}

void PackExecutor::end_batch(const std::set<std::string>& given) {
  remove_parked_if([&](const Member& m) { return given.count(m.group) > 0; });
}

void PackExecutor::release_parked() {
  remove_parked_if([](const Member&) { return true; });
}

void PackExecutor::remove_parked_if(const std::function<bool(const Member&)>& leaves) {
  std::vector<tuners::TrialId> out;
  for (const auto& m : members_) {
    if (m.parked && leaves(m)) out.push_back(m.job.trial);
  }
  for (const auto trial : out) remove(trial);
}

std::map<std::string, PackExecutor::GroupState> PackExecutor::group_states() const {
  std::map<std::string, GroupState> states;
  for (const auto& m : members_) {
    auto& state = states[m.group];
    if (m.parked) {
      state.parked = true;
    } else if (!m.waiting) {
      state.training = true;
    }
  }
  return states;
}

bool PackExecutor::busy() const {
  if (!finished_.empty()) return true;
  for (const auto& [key, state] : group_states()) {
    if (!state.parked || state.training) return true;
  }
  return false;
}

std::vector<const spec::TrialSpec*> PackExecutor::sole_unit() const {
  std::vector<const spec::TrialSpec*> specs;
  if (groups_.size() != 1 || !finished_.empty()) return specs;
  for (const auto& m : members_) {
    if (m.parked) return {};
    specs.push_back(&m.job.spec);
  }
  return specs;
}

bool PackExecutor::sole_unit_warm() const {
  return !sole_unit().empty() && groups_.begin()->second->graph_captured();
}

bool PackExecutor::contains(tuners::TrialId trial) const {
  for (const auto& m : members_) {
    if (m.job.trial == trial) return true;
  }
  return false;
}

bool PackExecutor::remove(tuners::TrialId trial) {
  for (auto it = members_.begin(); it != members_.end(); ++it) {
    if (it->job.trial != trial) continue;
    auto g = groups_.find(it->group);
    g->second->remove(trial);
    if (g->second->size() == 0) groups_.erase(g);
    members_.erase(it);
    return true;
  }
  return false;
}

std::int64_t PackExecutor::step_of(const Member& m) const {
  return groups_.at(m.group)->step_of(m.job.trial);
}

std::vector<std::pair<std::string, torch::Tensor>> PackExecutor::member_state(tuners::TrialId trial) const {
  for (const auto& m : members_) {
    if (m.job.trial == trial) return groups_.at(m.group)->member_state(trial);
  }
  throw Error("trial " + std::to_string(trial) + " is not on this actor");
}

std::shared_ptr<TrialCheckpoint> PackExecutor::capture(const Member& m, double budget) const {
  auto c = std::make_shared<TrialCheckpoint>();
  c->trial = m.job.trial;
  c->budget = budget;
  c->seed = m.job.seed;
  c->config = tuners::to_json(m.job.config);
  c->metrics = m.history;
  groups_.at(m.group)->capture(m.job.trial, *c);
  return c;
}

std::shared_ptr<TrialCheckpoint> PackExecutor::checkpoint_now(tuners::TrialId trial) const {
  for (const auto& m : members_) {
    if (m.job.trial != trial) continue;
    const std::int64_t step = step_of(m);
    if (step <= m.start_step) return nullptr;
    const double budget = unit_ == BudgetUnit::Steps
                              ? static_cast<double>(step)
                              : static_cast<double>(step) /
                                    static_cast<double>(stream_.steps_per_epoch(m.job.spec.batch_size));
    return capture(m, budget);
  }
  return nullptr;
}

void PackExecutor::fail(std::vector<PackEvent>& events, tuners::TrialId trial, const std::exception& e,
                        const char* during) {
  // One member's failure (a bad shape, out of memory) must not take the pack down.
  PackEvent failed;
  failed.trial = trial;
  failed.final = true;
  failed.error = during ? std::string(during) + ": " + error_message(e) : error_message(e);
  failed.out_of_memory = is_out_of_memory(e);
  events.push_back(std::move(failed));
}

std::vector<PackEvent> PackExecutor::step_round() {
  using Clock = std::chrono::steady_clock;
  std::vector<PackEvent> events = std::move(finished_);
  finished_.clear();
  std::set<tuners::TrialId> failed;
  if (members_.empty()) return events;
  // A group steps unless a member is parked there. Then it waits while the others wait at the
  // parked members' boundary; once one of them trains on, the parked ones leave and it steps
  // (the member training on keeps the group).
  std::set<std::string> leave;
  std::vector<std::string> stepping;
  for (const auto& [key, state] : group_states()) {
    if (state.parked && state.training) leave.insert(key);
    if (!state.parked || state.training) stepping.push_back(key);
  }
  end_batch(leave);
  if (stepping.empty()) return events;
  stream_.begin_round();
  // Every batch of the round is decoded first, on the caller's stream: on a GPU the units
  // then step on streams of their own, none waiting for a decode another unit started.
  for (const auto& key : stepping) groups_.at(key)->prefetch(stream_);
  streams_.begin(stepping.size());
  std::size_t unit = 0;

  // Wall time of a fused step is shared evenly by its members.
  std::map<std::string, double> group_seconds;
  std::map<std::string, int> group_size;
  for (const auto& key : stepping) {
    auto& group = groups_.at(key);
    group_size[key] = group->size();
    const auto start = Clock::now();
    const auto fail_group = [&](const std::exception& e) {
      for (const auto& m : members_) {
        if (m.group == key) {
          fail(events, m.job.trial, e);
          failed.insert(m.job.trial);
        }
      }
    };
    try {
      streams_.run(unit++, [&group = group, this] { group->train_step(stream_); });
    } catch (const std::exception& e) {
      fail_group(e);
    } catch (...) {
      // A model plugin's own layer may throw anything; it is still only its trials' failure.
      fail_group(Error("a step threw something that is not a std::exception (a model plugin's layer?)"));
    }
    group_seconds[key] = std::chrono::duration<double>(Clock::now() - start).count() / group->size();
  }
  for (auto& m : members_) {
    const auto it = group_seconds.find(m.group);
    if (it == group_seconds.end()) continue;
    m.seconds += it->second;
    m.waiting = false;
  }
  streams_.end();  // reports and checkpoints below read what the units wrote

  // Reports: each fused group evaluates once for all its members that are due.
  std::map<std::string, std::vector<tuners::TrialId>> due;
  std::vector<Member*> due_members;
  for (auto& m : members_) {
    if (m.parked || failed.count(m.job.trial) || !group_seconds.count(m.group) ||
        step_of(m) != m.report_steps[m.next_report]) {
      continue;
    }
    due_members.push_back(&m);
    due[m.group].push_back(m.job.trial);
  }
  std::map<tuners::TrialId, Metrics> metrics;
  const auto fail_due = [&](const std::vector<tuners::TrialId>& trials, const std::exception& e) {
    for (auto trial : trials) {
      fail(events, trial, e, "evaluating");
      failed.insert(trial);
    }
  };
  for (const auto& [key, trials] : due) {
    const auto start = Clock::now();
    try {
      for (auto& [trial, values] : groups_.at(key)->evaluate(stream_, trials)) metrics[trial] = std::move(values);
    } catch (const std::exception& e) {
      // Evaluation can run out of memory as a step can; the members leave the same way.
      fail_due(trials, e);
    } catch (...) {
      fail_due(trials, Error("it threw something that is not a std::exception (a model plugin's layer?)"));
    }
    const double share = std::chrono::duration<double>(Clock::now() - start).count() / trials.size();
    for (auto* m : due_members) {
      if (m->group == key) m->seconds += share;
    }
  }
  for (auto* m : due_members) {
    if (failed.count(m->job.trial)) continue;
    PackEvent e;
    e.trial = m->job.trial;
    e.final = m->next_report + 1 == m->report_steps.size();
    e.budget = m->report_budgets[m->next_report];
    e.unit_size = group_size[m->group];
    e.metrics = std::move(metrics[e.trial]);
    ++m->next_report;
    e.train_seconds = m->seconds;
    auto entry = nlohmann::json::object({{"budget", e.budget}, {"step", step_of(*m)}});
    for (const auto& [name, value] : e.metrics) entry[name] = value;
    m->history.push_back(std::move(entry));
    if (e.final && m->job.checkpoint) {
      try {
        e.checkpoint = capture(*m, e.budget);
      } catch (const std::exception& error) {
        e.checkpoint_error = error_message(error);
      }
    }
    events.push_back(std::move(e));
  }
  for (const auto& e : events) {
    if (!e.final) continue;
    Member* m = find(e.trial);
    if (m && m->job.park && e.error.empty()) {
      m->parked = true;
      m->park_step = step_of(*m);
      m->park_budget = e.budget;
    } else {
      remove(e.trial);
    }
  }
  return events;
}

}  // namespace packtune::actors
