// DriverCore: the checkpoint store's side of the driver. Which checkpoint a trial resumes from,
// what an actor's report says it resumed from, and which transfers (an actor's Offer of a new
// checkpoint, its FetchChunk of one it resumes or tests) a peer may make (docs/checkpoints.md,
// docs/security.md).
#include <algorithm>
#include <cmath>

#include <spdlog/spdlog.h>

#include "driver/driver_core.hpp"
#include "spec/checkpoint_name.hpp"

namespace packtune {

namespace proto = protocol;

// --- checkpoints (docs/checkpoints.md) ---------------------------------------------------------

// The store holds the trial's checkpoint at `budget`; the journal says so for --resume.
void DriverCore::record_checkpoint(TrialId trial, const std::string& path, double budget) {
  // The store deletes a trial's older files: a report naming another trial's file would
  // delete that one.
  const auto named = spec::parse_checkpoint_name(spec::file_name_of(path));
  if (!named || named->trial != trial) {
    admission_.refused(fmt::format("trial {}'s checkpoint {}: not a file of that trial", trial,
                                   Admission::printable(path)),
                       now_);
    return;
  }
  store_->record(trial, path, budget);
  tuning_.on_checkpoint(trial, path, budget);
}

// A checkpoint inside a running job: a restart of the job resumes from it.
void DriverCore::on_checkpointed(const ActorState& actor, const proto::Checkpointed& m) {
  const TrialState* trial = book_.running_on(m.trial, actor.id, m.lease);
  if (!trial) return;
  if (const auto why = Admission::budget_refusal(m.budget, {m.trial, trial->job_budget, trial->resume_budget});
      !why.empty()) {
    admission_.refused(fmt::format("a checkpoint of actor {}: {}", actor.id, why), now_);
    return;
  }
  record_checkpoint(m.trial, m.path, m.budget);
  later([trial = m.trial, budget = m.budget, actor = actor.id] {
    spdlog::debug("trial {} checkpointed at budget {:g} on actor {}", trial, budget, actor);
  });
}

// The budget of the trial's newest checkpoint, if it has one: where it resumes.
std::optional<double> DriverCore::checkpoint_of(TrialId id) const {
  if (!store_->has(id)) return std::nullopt;
  return store_->newest_budget(id);
}

// An actor that could not use a checkpoint (torn, corrupt, another architecture) fell back
// to an older one or to scratch; the unusable ones are forgotten.
bool DriverCore::check_resumed(const proto::Report& report, TrialState& trial) {
  if (trial.start_checked) return true;
  trial.start_checked = true;
  // Budgets recovered from file names (CheckpointStore::recover) carry six digits.
  if (std::abs(report.start_budget - trial.resume_budget) <= 1e-6 * std::max(1.0, trial.resume_budget)) return true;
  if (trial.exploited_from >= 0 && report.start_budget < trial.exploited_at * (1 - 1e-6)) {
    // Trained from anything but its donor's weights, the member's rows would claim a lineage
    // they do not have: the job fails, and pbt exploits the member again.
    spdlog::warn("trial {} could not load its copy of trial {}'s checkpoint at budget {:g}; see the actor's log",
                 report.trial, trial.exploited_from, trial.exploited_at);
    return false;
  }
  spdlog::warn("trial {} could not resume from its checkpoint at budget {:g} and started from {}; see the "
               "actor's log",
               report.trial, trial.resume_budget,
               report.start_budget > 0 ? fmt::format("budget {:g}", report.start_budget) : std::string("scratch"));
  store_->forget_after(report.trial, report.start_budget);
  return true;
}

// --- checkpoint transfers (docs/security.md, After registration) -------------------------------------------

bool DriverCore::admit_transfer(const std::string& identity, const proto::Message& message, Clock::time_point now) {
  now_ = now;
  if (const auto* chunk = std::get_if<proto::Chunk>(&message)) {
    if (store_->pulling(identity, chunk->transfer)) return true;
    admission_.refused("a Chunk the store did not ask for", now_);
    return false;
  }
  const auto* offer = std::get_if<proto::Offer>(&message);
  const auto* fetch = std::get_if<proto::FetchChunk>(&message);
  if (!offer && !fetch) return false;
  ActorState* actor = registry_.actor_by_token(offer ? offer->token : fetch->token);
  if (!actor || actor->dead) {
    admission_.refused(fmt::format("{} from a peer that is no live actor's transfer socket", proto::verb(message)),
                       now_);
    return false;
  }
  const auto why = offer ? offer_refusal(*actor, *offer) : fetch_refusal(*actor, *fetch);
  if (why.empty()) return true;
  admission_.refused(fmt::format("{} of actor {}: {}", proto::verb(message), actor->id, why), now_);
  if (offer) {
    send_to(identity, proto::Stored{offer->transfer, "", why});
  } else {
    send_to(identity, proto::Chunk{fetch->transfer, fetch->offset, 0, why});
  }
  return false;
}

std::string DriverCore::offer_refusal(const ActorState& actor, const proto::Offer& offer) {
  const auto named = spec::parse_checkpoint_name(offer.name);
  if (!named) return "not a checkpoint name: " + Admission::printable(offer.name);
  const TrialState* trial = book_.running_on(named->trial, actor.id);
  if (!trial) return fmt::format("trial {} is not a trial this actor trains", named->trial);
  return Admission::offer_refusal(offer, {named->trial, trial->job_budget, trial->resume_budget},
                                  config_.checkpoint_every > 0);
}

// A fetch is a resume's (the trial's checkpoints, named in its Assign) or the test's.
std::string DriverCore::fetch_refusal(const ActorState& actor, const proto::FetchChunk& fetch) {
  const auto named = spec::parse_checkpoint_name(fetch.name);
  if (!named) return "not a checkpoint name: " + Admission::printable(fetch.name);
  const bool tests = final_test_.tests(actor.id, named->trial);
  if (!tests && !book_.running_on(named->trial, actor.id)) {
    return fmt::format("trial {} is not a trial this actor trains or tests", named->trial);
  }
  for (const auto& path : store_->newest_first(named->trial)) {
    if (spec::file_name_of(path) == fetch.name) return "";
  }
  return fmt::format("{} is not a checkpoint the store holds for trial {}", fetch.name, named->trial);
}

}  // namespace packtune
