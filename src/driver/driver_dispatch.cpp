// DriverCore: placement (docs/planner.md). Jobs go to actors with room as the planner places
// them, promotions at a rung boundary are re-planned together, jobs of a shape nobody profiled
// wait for its profile, and a pack that ran out of memory is split.
#include <spdlog/spdlog.h>

#include "driver/driver_core.hpp"
#include "driver/rung_replan.hpp"
#include "experiment/trial_shape.hpp"
#include "node/actor_supervisor.hpp"
#include "packing/memory_model.hpp"
#include "packtune/error.hpp"

namespace packtune {

namespace proto = protocol;

bool DriverCore::step(Clock::time_point now) {
  check_heartbeats(now);
  release(profiles_.expire(now));
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
  units_started_.clear();
  bool over = false;
  try {
    over = dispatch_jobs();
  } catch (...) {
    send_assigns();  // the jobs the book started before the throw
    throw;
  }
  send_assigns();
  release_parked_left_behind();
  return over;
}

// Each actor's jobs of this pass, the last one without `more`.
void DriverCore::send_assigns() {
  for (auto& [actor_id, assigns] : assigns_) {
    ActorState* actor = registry_.actor_by_id(actor_id);
    for (std::size_t i = 0; actor && i < assigns.size(); ++i) {
      assigns[i].more = i + 1 < assigns.size();
      send(*actor, assigns[i]);
    }
  }
  assigns_.clear();
}

bool DriverCore::dispatch_jobs() {
  if (capacities_stale_) update_capacities();
  while (local_actors_settled()) {
    // Trials the actors could start now: member slots, as far as their unit slots allow, and
    // the parked trials' places, which their next jobs take or which are freed for others.
    auto free = static_cast<std::int64_t>(parked_.size());
    for (const auto& a : plan_.actors) {
      if (!planner_.takes_more(a)) continue;
      const int units_left = std::max(1, a.actor.max_units - static_cast<int>(a.units.size()));
      free += std::min(a.actor.max_members - a.members(), units_left);
    }
    if (free == 0) break;
    if (book_.queue_empty()) {
      // Jobs held for a profile wait a second or two; drawing more than the actors could
      // start meanwhile takes jobs out of the tuner's order: a Hyperband bracket's
      // promotions, drawn after them, queued behind the next brackets' new trials (and a
      // sweep of 100,000 trials would come into memory in one call).
      if (profiles_.held_jobs() >= free) break;
      Job job = tuning_.next_job();
      if (job.kind == Job::Kind::Wait) break;
      if (job.kind == Job::Kind::Finished) {
        if (book_.running() == 0 && profiles_.held_jobs() == 0) return true;
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
    if (hold_for_profile(job, trial)) {
      book_.take_next();
      continue;
    }
    if (const auto parked = take_parked(job.trial)) {
      start_next_job(*parked, trial);
      continue;
    }
    packing::Unplaced why;
    const double steps = job_steps(config_, options_.train_images, job.budget, trial.shape.batch_size);
    auto target = planner_.place(plan_, {job.trial, trial.shape, steps}, &why);
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
  const auto* unit = planner_.unit_of(plan_, started.trial);
  assign.unit = "u" + std::to_string(unit->id);
  trial.unit = assign.unit;
  trial.job_start = seconds_since_start();
  assign.max_fused = unit->solo ? 1 : 0;
  // Nothing can resume a job at the largest budget: its checkpoint would only be deleted.
  // The final model too when the best trial's is tested at the end (on_final_checkpoint keeps few).
  assign.checkpoint = config_.keep_checkpoints == KeepCheckpoints::All || config_.evaluate_test ||
                      started.budget < config_.max_budget * (1 - 1e-9);
  // pbt's next generation goes on from where this one ends: in the unit, when it can.
  assign.park = config_.tuner == "pbt" && started.budget < config_.max_budget * (1 - 1e-9);
  assign.exploit_from = trial.exploited_from;
  parked_.assigned(started.trial, assign.park);
  units_started_.insert({actor->id, assign.unit});
  assigns_[actor->id].push_back(std::move(assign));
}

// The Assign of a job; a promotion or a restart names the trial's checkpoints, newest first.
proto::Assign DriverCore::make_assign(const Job& job, TrialState& trial) {
  proto::Assign assign{job.trial, trial.full, job.budget, trial.seed};
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
    spdlog::debug("trial {} resumes from its checkpoint at budget {:g} and trains to budget {:g}", job.trial,
                 trial.resume_budget, job.budget);
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
    if (hold_for_profile(job, trial)) continue;  // the gate gives it back later
    demands.push_back(
        {job.trial, trial.shape, job_steps(config_, options_.train_images, job.budget, trial.shape.batch_size)});
    jobs.emplace(job.trial, std::move(job));
  }
  const auto placement = replan_rung(planner_, plan_, demands);
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

// --- throughput profiles and memory ------------------------------------------------------------

// Whether the job waits in the gate for its shape's profile; sends the request it asks for.
bool DriverCore::hold_for_profile(const Job& job, const TrialState& trial) {
  auto admission = profiles_.admit(job, trial.shape, trial.full, trial.spec, now_);
  if (admission.ask) send(*registry_.actor_by_id(admission.ask->actor), admission.ask->profile);
  return admission.held;
}

// Says once per kind of device when its actors train one unit at a time although max_pack
// allows more: otherwise a user who asked for packs of 8 sees one trial per actor and
// cannot tell why.
void DriverCore::explain_units(const std::string& device) {
  const auto kind = packing::device_class(device);
  if (config_.max_pack <= 1 || !explained_.insert(kind).second) return;
  if (packing::units_per_actor(setup_.mixed_packs, device) > 1) return;
  spdlog::debug("{} actors train one unit (a model, or trials fused into one) at a time, as mixed_packs {} says{}; "
               "\"mixed_packs\": \"always\" packs units side by side",
               kind, to_string(config_.mixed_packs),
               setup_.mixed_packs == packing::MixedPacks::Auto
                   ? " (units on a CPU take turns on its cores: a second one adds no throughput and delays the first)"
                   : "");
}

// The planner's view of the live actors (ActorRegistry::capacities); an actor keeps the
// units it trains now.
void DriverCore::update_capacities() {
  capacities_stale_ = false;
  std::map<int, packing::ActorPlan> previous;
  for (auto& a : plan_.actors) previous[a.actor.id] = std::move(a);
  plan_.actors.clear();
  for (const auto& spec : registry_.capacities(setup_.max_members, setup_.mixed_packs)) {
    packing::ActorPlan a = previous.count(spec.id) ? std::move(previous[spec.id]) : packing::ActorPlan{};
    a.actor = spec;
    planner_.refresh(a);
    plan_.actors.push_back(std::move(a));
  }
}

void DriverCore::on_measured(const ActorState& actor, const proto::Measured& m) {
  for (const auto& [id, trial] : book_.trials()) {
    if (trial.shape.key != m.key) continue;
    const auto before = planner_.memory_model().estimate(trial.shape, m.members).peak();
    planner_.memory_model().record_measurement(trial.shape, m.members, m.peak_bytes);
    spdlog::debug("actor {} measured {} MiB for {} trial(s) of shape {} (the model said {} MiB)", actor.id,
                 m.peak_bytes >> 20, m.members, m.key, before >> 20);
    for (auto& a : plan_.actors) planner_.refresh(a);
    return;
  }
}

// The unit ran out of memory: its shape's figure grows and its trials go back to the
// queue, to be placed with the new figure (in smaller units or on other actors). Their
// last checkpoint, if any, is where they resume.
void DriverCore::on_out_of_memory(ActorState& actor, const proto::OutOfMemory& m) {
  bool corrected = false;
  for (std::size_t i = 0; i < m.trials.size(); ++i) {
    const auto id = m.trials[i];
    const TrialState* trial = i < m.leases.size() ? book_.running_on(id, actor.id, m.leases[i]) : nullptr;
    if (!trial) continue;
    if (!corrected) {
      planner_.memory_model().correct_upward(trial->shape.key, 2.0);
      corrected = true;
      spdlog::warn("actor {}: {} trial(s) of shape {} ran out of memory ({}); the memory model's figure for "
                   "that shape doubles and the pack is split",
                   actor.id, m.trials.size(), trial->shape.key, m.message);
    }
    actor.running.erase(id);
    planner_.remove(plan_, id);
    tell_failed(book_.out_of_memory(id, checkpoint_of(id)));
  }
  for (auto& a : plan_.actors) planner_.refresh(a);
}

}  // namespace packtune
