// DriverCore: placement (docs/planner.md). Jobs go to actors with room as the planner places
// them, promotions at a rung boundary are re-planned together, the actor that gets a shape
// nobody profiled yet profiles it while it trains it, and a pack that ran out of memory is split.
#include <spdlog/spdlog.h>

#include "driver/driver_core.hpp"
#include "experiment/trial_shape.hpp"
#include "node/actor_supervisor.hpp"
#include "packing/memory_model.hpp"
#include "packtune/error.hpp"

namespace packtune {

namespace proto = protocol;

bool DriverCore::step(Clock::time_point now) {
  check_heartbeats(now);
  profiles_.expire(now);
  return dispatch();
}

// The first jobs wait until every actor of the nodes that joined is ready (or a grace
// period passed), so they are spread over all actors instead of filling whichever started
// first.
bool DriverCore::local_actors_settled() {
  if (!settled_) settled_ = registry_.live_actors() > 0 && registry_.settled(now_);
  return settled_;
}

// Hands out work while actors have room. Returns true when the experiment is over.
bool DriverCore::dispatch() {
  placement_.begin_pass();
  bool over = false;
  try {
    over = dispatch_jobs();
  } catch (...) {
    send_assigns();  // the jobs the book started before the throw
    throw;
  }
  send_assigns();
  // A unit steps only once none of its members is parked (pack_executor.hpp); a parked trial
  // whose own job comes later resumes from its checkpoint.
  stop_parked(placement_.end_pass());
  return over;
}

// Each actor's jobs of this pass, the last one without `more`, then the profiles it is asked
// for: by then its unit of the shape is in its pack, and its rounds can be timed.
void DriverCore::send_assigns() {
  for (auto& [actor_id, assigns] : assigns_) {
    ActorState* actor = registry_.actor_by_id(actor_id);
    for (std::size_t i = 0; actor && i < assigns.size(); ++i) {
      assigns[i].more = i + 1 < assigns.size();
      send(*actor, assigns[i]);
    }
  }
  assigns_.clear();
  for (const auto& [actor_id, profile] : profile_asks_) {
    if (ActorState* actor = registry_.actor_by_id(actor_id)) send(*actor, profile);
  }
  profile_asks_.clear();
}

bool DriverCore::dispatch_jobs() {
  // The plan re-reads the actors only once they may get jobs: while thousands say Ready, batch
  // by batch, each re-reading would go over all of them and hold the next batch's Hellos.
  if (local_actors_settled()) placement_.catch_up(registry_);
  while (local_actors_settled()) {
    const auto free = placement_.free_slots();
    if (free == 0) break;
    if (book_.queue_empty()) {
      Job job = tuning_.next_job();
      if (job.kind == Job::Kind::Wait) break;
      if (job.kind == Job::Kind::Finished) {
        if (book_.running() == 0) return true;
        break;
      }
      if (job.from_trial >= 0 && !adopt_exploit(job)) continue;
      if (replans_rungs() && job.kind == Job::Kind::Resume) {
        start_rung(std::move(job));
        continue;
      }
      book_.enqueue(std::move(job));
    }
    const Job& job = book_.next();
    const auto opened = book_.open_next();
    if (!opened.trial) {
      tell_failed(opened.failure);
      continue;
    }
    TrialState& trial = *opened.trial;
    profiles_.prepare(trial.shape, trial.spec);
    if (const auto parked = take_parked(job.trial)) {
      start_next_job(*parked, trial);
      continue;
    }
    packing::Unplaced why;
    const double steps = job_steps(config_, options_.train_images, job.budget, trial.shape.batch_size);
    auto target = placement_.place({job.trial, trial.shape, steps}, &why);
    if (!target) {
      if (!why.waits) {
        const auto id = book_.take_next().trial;
        tell_failed(book_.give_up(id, why.reason));
        continue;
      }
      if (release_parked_for_room()) continue;
      break;
    }
    start_next_job(*target, trial);
  }
  // The driver's own slots end for good within bounds: a hung actor is killed, a process that
  // never joins too (the loop's), and restarts are limited.
  if (registry_.live_actors() > 0 || registry_.open_local_slots() > 0) {
    alone_since_.reset();
    return false;
  }
  return no_actor_left();
}

// No actor trains and none of the driver's own will come back. An actor that exited on bad
// input said why before it went: that is the user's line. Nodes and actors started elsewhere
// may still join, as at the start: the driver waits join_timeout_seconds for one. A node's
// slots that may still bring one (starting, restarting, or a process the node cannot tell is
// hung) get the nodes' longest restart delay more, and no more: they never hold the run for good.
bool DriverCore::no_actor_left() {
  if (actor_input_error_ && !actor_said_.empty()) throw InputError(actor_said_);
  const bool joined = registry_.any_actor_joined();
  const int node_slots = registry_.open_node_slots();
  const double restart_wait = SupervisorOptions{}.max_delay_seconds;
  const std::string why = actor_failures_.empty() ? "every actor exited" : actor_failures_.back();
  if (!alone_since_) {
    alone_since_ = now_;
    if ((joined || config_.actors > 0) && node_slots == 0) {
      spdlog::warn("no actor is left to train on ({}); waiting {:g} s (join_timeout_seconds) for one to join: "
                   "`{}`", why, config_.join_timeout_seconds, join_command());
    }
  }
  const double wait = config_.join_timeout_seconds + (node_slots > 0 ? restart_wait : 0);
  if (now_ - *alone_since_ < std::chrono::duration<double>(wait)) return false;
  if (node_slots > 0) {
    throw Error(fmt::format("no actor is left to train on, and none of the {} actor slot(s) of the nodes joined "
                            "within {:g} s (join_timeout_seconds and {:g} s for restarts); see the nodes' actor "
                            "logs; continue with `packtune run --resume {}`",
                            node_slots, config_.join_timeout_seconds, restart_wait, options_.out_dir));
  }
  if (!joined && config_.actors == 0) {
    throw Error(fmt::format("no actor joined within {:g} s (join_timeout_seconds); start `{}` on the machines "
                            "that should train", config_.join_timeout_seconds, join_command()));
  }
  throw Error(fmt::format("no actor is left to train on, and none joined within {:g} s (join_timeout_seconds): "
                          "{}; continue with `packtune run --resume {}`",
                          config_.join_timeout_seconds, why, options_.out_dir));
}

// Rung boundaries are Hyperband's and successive halving's: a rung ends and its promotions
// come together. ASHA and asynchronous Hyperband promote a trial or two as each result
// arrives; a re-plan for each (a copy of the whole plan, to see whether a running unit would
// move) doubled the driver's CPU per message at 1,000 actors, for nothing online placement
// does not do. Plugins may be either, so they are placed online.
bool DriverCore::replans_rungs() const {
  return config_.replan && (config_.tuner == "hyperband" || config_.tuner == "sha");
}

// The queue's next job starts on the actor the plan put it on.
void DriverCore::start_next_job(int actor_id, TrialState& trial) {
  ActorState* actor = registry_.actor_by_id(actor_id);
  const Job started = book_.start_next(actor->id);
  actor->running.insert(started.trial);
  auto assign = make_assign(started, trial);
  // pbt's next generation goes on from where this one ends: in the unit, when it can.
  assign.park = config_.tuner == "pbt" && started.budget < config_.max_budget * (1 - 1e-9);
  const auto placed = placement_.start(actor->id, started.trial, assign.park);
  assign.unit = placed.unit;
  trial.unit = assign.unit;
  trial.job_start = seconds_since_start();
  assign.max_fused = placed.solo ? 1 : 0;
  // Nothing can resume a job at the largest budget: its checkpoint would only be deleted.
  // The final model too when the best trial's is tested at the end (on_final_checkpoint keeps few).
  assign.checkpoint = config_.keep_checkpoints == KeepCheckpoints::All || config_.evaluate_test ||
                      started.budget < config_.max_budget * (1 - 1e-9);
  assign.exploit_from = trial.exploited_from;
  assigns_[actor->id].push_back(std::move(assign));
  if (auto profile = profiles_.placed(actor->id, trial.shape, *trial.full, trial.spec, now_)) {
    profile_asks_.emplace_back(actor->id, std::move(*profile));
  }
}

// The Assign of a job; a promotion or a restart names the trial's checkpoints, newest first.
proto::Assign DriverCore::make_assign(const Job& job, TrialState& trial) {
  proto::Assign assign{job.trial, *trial.full, job.budget, trial.seed};
  assign.spec = trial.spec;
  assign.lease = trial.lease;
  assign.resume_from = store_->newest_first(job.trial);
  // An exploit goes on from its donor's weights or fails: never from the member's own older ones.
  if (trial.exploited_from >= 0 && !assign.resume_from.empty()) assign.resume_from.resize(1);
  trial.resume_budget = store_->newest_budget(job.trial);
  assign.resume_budget = trial.resume_budget;
  trial.start_checked = false;
  if (store_->has(job.trial)) {
    trial.reached = trial.resume_budget;
    later([id = job.trial, from = trial.resume_budget, to = job.budget] {
      spdlog::debug("trial {} resumes from its checkpoint at budget {:g} and trains to budget {:g}", id, from, to);
    });
  } else if (job.kind == Job::Kind::Resume) {
    spdlog::warn("trial {} has no checkpoint to resume from; it trains from scratch to budget {:g}", job.trial,
                 job.budget);
  }
  return assign;
}

// A rung boundary (docs/planner.md): the tuner promotes trials, and every promotion it has
// now is planned together (rung_replan.hpp) rather than placed as it comes. Called with the
// first Resume on an empty queue; the jobs the plan has no room for wait at the queue's
// front, and the tuner's next other job (a new trial) behind them.
void DriverCore::start_rung(Job first) {
  std::vector<Job> promoted{std::move(first)};
  std::optional<Job> after;
  while (true) {
    Job job = tuning_.next_job();
    if (job.kind == Job::Kind::Resume) {
      promoted.push_back(std::move(job));
      continue;
    }
    // Wait and Finished change nothing in the tuner: the loop asks again later.
    if (job.kind == Job::Kind::Start) after = std::move(job);
    break;
  }
  if (promoted.size() == 1) {
    // Placing one trial online is its re-plan, without a copy of the whole plan.
    book_.enqueue(std::move(promoted.front()));
    if (after) book_.enqueue(std::move(*after));
    return;
  }
  std::map<TrialId, Job> jobs;
  std::vector<packing::TrialDemand> demands;
  std::vector<Job> unknown;  // trials the book never opened: the usual path says why, after the placed
  for (auto& job : promoted) {
    const auto known = book_.trials().find(job.trial);
    if (known == book_.trials().end()) {
      unknown.push_back(std::move(job));
      continue;
    }
    const TrialState& trial = known->second;
    profiles_.prepare(trial.shape, trial.spec);
    demands.push_back(
        {job.trial, trial.shape, job_steps(config_, options_.train_images, job.budget, trial.shape.batch_size)});
    jobs.emplace(job.trial, std::move(job));
  }
  const auto placement = placement_.replan_rung(demands);
  for (const auto& p : placement.placed) book_.enqueue(jobs.at(p.trial));
  for (auto& job : unknown) book_.enqueue(std::move(job));
  for (const auto id : placement.waiting) book_.enqueue(jobs.at(id));
  if (after) book_.enqueue(std::move(*after));
  if (!demands.empty()) {
    spdlog::debug("rung boundary: {} promoted trial(s) re-planned into {} unit(s) on {} actor(s){}{}",
                 demands.size(), placement.units, placement.actors,
                 placement.waiting.empty() ? "" : fmt::format(", {} wait for room", placement.waiting.size()),
                 placement.replanned ? "" : " (placed one by one: a running unit would have moved)");
  }
  for (const auto& p : placement.placed) {
    const auto opened = book_.open_next();
    start_next_job(p.actor, *opened.trial);
  }
}

// --- memory ------------------------------------------------------------------------------------

void DriverCore::on_measured(const ActorState& actor, const proto::Measured& m) {
  for (const auto& [id, trial] : book_.trials()) {
    if (trial.shape.key != m.key) continue;
    const auto before = placement_.record_measurement(trial.shape, m.members, m.peak_bytes);
    spdlog::debug("actor {} measured {} MiB for {} trial(s) of shape {} (the model said {} MiB)", actor.id,
                 m.peak_bytes >> 20, m.members, m.key, before >> 20);
    return;
  }
}

// The unit ran out of memory: its shape's figure grows and its trials go back to the
// queue, to be placed with the new figure (in smaller units or on other actors). Their
// last checkpoint, if any, is where they resume.
void DriverCore::on_out_of_memory(ActorState& actor, const proto::OutOfMemory& m) {
  std::vector<TrialId> lost;
  const TrialState* first = nullptr;
  for (std::size_t i = 0; i < m.trials.size() && i < m.leases.size(); ++i) {
    const TrialState* trial = book_.running_on(m.trials[i], actor.id, m.leases[i]);
    if (!trial) continue;
    if (!first) first = trial;
    lost.push_back(m.trials[i]);
  }
  if (!first) return;
  spdlog::warn("actor {}: {} trial(s) of shape {} ran out of memory ({}); the memory model's figure for "
               "that shape doubles and the pack is split",
               actor.id, m.trials.size(), first->shape.key, m.message);
  placement_.out_of_memory(first->shape.key, lost);
  for (const auto id : lost) {
    actor.running.erase(id);
    tell_failed(book_.out_of_memory(id, checkpoint_of(id)));
  }
}

}  // namespace packtune
