// DriverCore: construction, the messages of peers, reports and results, resume.
// Placement is in driver_dispatch.cpp, peers coming and going in driver_peers.cpp, checkpoints
// and their transfers in driver_checkpoints.cpp, the end of a run in driver_finish.cpp.
#include "driver/driver_core.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/compile.h>
#include <spdlog/spdlog.h>

#include "experiment/trial_shape.hpp"
#include "packtune/error.hpp"
#include "packtune/test_hold.hpp"
#include "spec/trial_spec.hpp"
#include "tuners/tuner_registry.hpp"
#include "util/random_token.hpp"

namespace packtune {

namespace proto = protocol;

double next_report(double report_every, double reported, double job_budget) {
  const double eps = 1e-9 * std::max(1.0, job_budget);
  if (!(report_every > 0)) return job_budget;
  const double next = (std::floor((reported + eps) / report_every) + 1) * report_every;
  return next < job_budget - eps ? next : job_budget;
}

DriverCore::DriverCore(const ExperimentConfig& config, Options options, Send send, Clock::time_point now)
    : config_(config),
      options_(std::move(options)),
      send_(std::move(send)),
      now_(now),
      tuner_(tuners::TunerRegistry::instance().create(config.tuner, tuner_context(config))),
      tuning_(*tuner_, nullptr),
      placement_(config),
      registry_({config.actor_timeout_seconds, config.actor_timeout_seconds}),
      profiles_(placement_.planner(), placement_.plan(), registry_, {config.fuse == packing::FuseMode::Auto && config.max_pack > 1, config.max_pack,
                                            config.profile_timeout_seconds, options_.profile_cache_dir,
                                            options_.fresh_profiles}),
      book_(config.model, config.seed,
            [padded = fuse_pads_widths(config), input = options.input](const tuners::TrialConfig& full) {
              auto spec = spec::parse_trial_spec(full, "trial");
              auto shape = trial_shape(spec, input, padded);
              return TrialBook::Described{std::move(spec), std::move(shape)};
            }),
      start_(now),
      last_heartbeat_(now) {
  tuning_.check_jobs(tuner_->name(), config.max_budget);
  for (const auto& warning : tuner_->warnings()) spdlog::warn("{}", warning);
}

DriverCore::~DriverCore() = default;

void DriverCore::listening_on(const std::string& endpoint, bool curve) {
  endpoint_ = endpoint;
  curve_ = curve;
}

void DriverCore::attach(std::unique_ptr<Journal> journal, std::unique_ptr<ResultsWriter> results,
                        std::unique_ptr<CheckpointStore> store, Clock::time_point now) {
  journal_ = std::move(journal);
  results_ = std::move(results);
  store_ = std::move(store);
  records_ = std::make_unique<RecordThread>([this] {
    journal_->commit();
    results_->flush();
    if (after_commit_) after_commit_();
  });
  tuning_.set_journal(journal_.get(), results_.get(), records_.get());
  store_->set_keep_all(config_.keep_checkpoints == KeepCheckpoints::All);
  now_ = start_ = now;
}

void DriverCore::commit() {
  if (records_) records_->commit();
}

void DriverCore::later(RecordThread::Task task) { RecordThread::post_or_run(records_.get(), std::move(task)); }

void DriverCore::commit_soon() {
  if (records_) records_->commit_soon();
}

double DriverCore::seconds_since_start() const { return std::chrono::duration<double>(now_ - start_).count(); }

void DriverCore::send(ActorState& actor, const proto::Message& message) {
  send_to(actor.identity, message);
  actor.last_sent = now_;
}

void DriverCore::send_to(const std::string& identity, const proto::Message& message) { send_(identity, message); }

// A peer of another protocol version is refused before anything else is read from it.
template <class FirstMessage>
bool DriverCore::refuse(const std::string& identity, const FirstMessage& hello) {
  const auto why = proto::refusal(hello);
  if (why.empty()) return false;
  spdlog::warn("refused a {} from {}: {}", proto::verb(proto::Message{hello}), hello.host, why);
  send_to(identity, proto::Reject{why});
  return true;
}

void DriverCore::on_message(const std::string& identity, const proto::Message& message, Clock::time_point now) {
  now_ = now;
  if (auto* hello = std::get_if<proto::NodeHello>(&message)) {
    if (refuse(identity, *hello)) return;
    // A peer says Hello again while no answer came (hello_driver: one may go with a connection
    // that broke after its handshake): a node already joined hears its Welcome again.
    if (auto* known = registry_.node(identity); known && !known->dead) {
      send_to(identity, proto::NodeWelcome{proto::kProtocolVersion, known->id, config_.heartbeat_seconds,
                                           config_.actor_timeout_seconds});
      return;
    }
    const auto& node = registry_.add_node(identity, *hello, now_);
    send_to(identity, proto::NodeWelcome{proto::kProtocolVersion, node.id, config_.heartbeat_seconds,
                                         config_.actor_timeout_seconds});
    std::string devices;
    for (const auto& d : node.devices) {
      devices += fmt::format("{}{} ({} MiB)", devices.empty() ? "; " : ", ", d.name, d.memory_bytes >> 20);
    }
    spdlog::info("node {} joined from {} (pid {}): {} actor(s), {} core(s), {} MiB memory{}", node.id, node.host,
                 node.pid, node.actors, node.cores, node.memory_bytes >> 20, devices);
    return;
  }
  if (auto* node = registry_.node(identity)) {
    node->last_heard = now_;
    if (node->dead && !unreadable(identity)) {
      registry_.revive_node(*node);
      on_node_revived(*node);
    }
    on_node_message(*node, message);
    return;
  }
  if (auto* hello = std::get_if<proto::Hello>(&message)) {
    if (refuse(identity, *hello)) return;
    // An actor says Hello when it starts and when told to rejoin, and drops its pack before it
    // rejoins: a Hello again from a live actor means the jobs it held run nowhere. They go back
    // to the queue now, as when an actor is lost. Refusing the Hello instead would leave them
    // assigned for good: the heartbeat check never retires an actor that keeps talking.
    // An actor not ready yet and holding nothing says it again while no answer came (see
    // NodeHello above): it hears its Welcome again.
    ActorState* known = registry_.actor(identity);
    if (known && !known->dead && !known->ready && known->running.empty()) {
      send(*known, welcome_of(*known));
      return;
    }
    if (known && !known->dead) retire(*known, "it said Hello again");
    auto& actor = registry_.add_actor(identity, *hello, now_);
    registry_.give_token(actor, util::random_token());
    send(actor, welcome_of(actor));
    spdlog::debug("actor {} joined from {} (pid {}{})", actor.id, actor.host, actor.pid,
                 actor.node_id >= 0 ? fmt::format(", node {} slot {}", actor.node_id, actor.local_index) : "");
    return;
  }
  ActorState* found = registry_.actor(identity);
  if (!found) {
    // A node or actor of the driver this one resumed (--resume after a kill): it has jobs
    // and ids this driver never gave. Told once, it drops them and says Hello again.
    // Nothing else of it is taken: a stranger gets no work and no file.
    if (asked_to_hello_.size() >= 65536) asked_to_hello_.clear();  // bounded; a second Rejoin does no harm
    if (asked_to_hello_.insert(identity).second) {
      admission_.refused(fmt::format("{} from a peer that never said Hello to this driver; asking it to join again",
                                     proto::verb(message)),
                         now_);
      send_to(identity, proto::Rejoin{"the driver was restarted (packtune run --resume) and does not know this "
                                      "peer; its jobs went back to the queue"});
    }
    return;
  }
  ActorState& actor = *found;
  actor.last_heard = now_;
  if (actor.dead) {
    ask_to_rejoin(actor, message);
    return;
  }
  on_actor_message(actor, message);
}

void DriverCore::on_actor_message(ActorState& actor, const proto::Message& message) {
  std::visit(
      [&](const auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, proto::Ready>) {
          if (const auto why = proto::refusal(m); !why.empty()) {
            retire(actor, "its Ready was refused: " + why);
            return;
          }
          registry_.mark_ready(actor, m);
          // Once per batch, before the next dispatch: 1,000 actors say Ready at once, and each
          // update goes over every actor.
          placement_.actors_changed();
          spdlog::debug("actor {} ready on {}", actor.id, m.device);
          if (const auto line = placement_.explain_units(m.device); !line.empty()) spdlog::debug("{}", line);
        } else if constexpr (std::is_same_v<T, proto::Report>) {
          on_report(actor, m);
        } else if constexpr (std::is_same_v<T, proto::TrialFailed>) {
          on_trial_failed(actor, m);
        } else if constexpr (std::is_same_v<T, proto::ActorFailed>) {
          actor_failures_.push_back(m.message);
          actor_said_ = m.message;
          spdlog::error("actor {} failed: {}", actor.id, m.message);
          retire(actor, "it failed: " + m.message);
        } else if constexpr (std::is_same_v<T, proto::Measured>) {
          if (const auto why = proto::refusal(m); !why.empty()) {
            spdlog::warn("ignoring a measurement of actor {}: {}", actor.id, why);
          } else {
            on_measured(actor, m);
          }
        } else if constexpr (std::is_same_v<T, proto::OutOfMemory>) {
          on_out_of_memory(actor, m);
        } else if constexpr (std::is_same_v<T, proto::Checkpointed>) {
          on_checkpointed(actor, m);
        } else if constexpr (std::is_same_v<T, proto::Profiled>) {
          profiles_.on_profiled(actor.id, m);
        } else if constexpr (std::is_same_v<T, proto::Tested>) {
          if (final_test_.tests(actor.id, m.trial)) {
            auto answer = m;
            auto why = Admission::metrics_refusal(m.metrics, true);
            if (why.empty() && !std::isfinite(m.budget)) why = "its budget is not a number";
            if (!why.empty()) {
              admission_.refused(fmt::format("the test answer of actor {}: {}", actor.id, why), now_);
              answer.metrics.clear();
              answer.error = "its answer was refused: " + why;
            }
            final_test_.answer(std::move(answer));
          }
        } else if constexpr (std::is_same_v<T, proto::Heartbeat>) {
        } else {
          spdlog::warn("unexpected {} from actor {}", proto::verb(message), actor.id);
        }
      },
      message);
}

proto::Welcome DriverCore::welcome_of(const ActorState& actor) const {
  proto::Welcome welcome;
  welcome.actor_id = actor.id;
  welcome.transfer_token = actor.transfer_token;
  welcome.spec = experiment_spec();
  return welcome;
}

proto::ExperimentSpec DriverCore::experiment_spec() const {
  proto::ExperimentSpec s;
  // The config's paths are absolute already (read_data): actors started elsewhere read the same.
  s.data = nlohmann::json(config_.data).dump();
  s.device = config_.device;
  s.budget_unit = config_.budget_unit;
  s.report_every = config_.report_every;
  s.data_seed = config_.seed;
  s.heartbeat_seconds = config_.heartbeat_seconds;
  s.fuse = to_string(config_.fuse);
  s.checkpoint_dir = store_->dir();
  s.store_token = store_->token();
  s.actor_memory_bytes = config_.actor_memory;
  s.checkpoint_every_seconds = config_.checkpoint_every;
  s.model_plugin = config_.model_plugin;
  s.deterministic = config_.deterministic;
  s.precision = config_.precision;
  s.max_budget = config_.max_budget;
  return s;
}

// --- reports and results ---------------------------------------------------------------------

void DriverCore::on_report(ActorState& actor, const proto::Report& report) {
  TrialState* found = book_.running_on(report.trial, actor.id, report.lease);
  if (!found) return;  // stale: stopped, or given to another actor since
  TrialState& trial = *found;
  if (const auto why = report_refusal(report, trial); !why.empty()) {
    // Never written: a report is a row of results.jsonl and a result for the tuner. The job
    // fails, so that the run does not wait for a report that will not come.
    admission_.refused(fmt::format("a report of actor {} for trial {}: {}; the job fails", actor.id, report.trial, why),
                       now_);
    send(actor, proto::Stop{report.trial});
    finish_job(actor, report.trial, true);
    return;
  }
  if (!check_resumed(report, trial)) {
    send(actor, proto::Stop{report.trial});
    finish_job(actor, report.trial, true);
    return;
  }
  if (report.final && report.disk_full) {
    // The job's report waits for its checkpoint; a resume re-runs the job from its last one.
    throw Error(report.checkpoint_error + "; the experiment stops: free space there, then continue with "
                "`packtune run --resume " + options_.out_dir + "`");
  }
  trial.reached = report.budget;
  auto metric = report.metrics.find(config_.metric);
  trial.last_metric = metric == report.metrics.end() ? std::numeric_limits<double>::quiet_NaN() : metric->second;
  // A trial whose loss is no longer a number has diverged: its accuracy is chance, and the
  // tuner hears NaN (ranked below everything, never promoted), as docs/tuners.md says.
  for (const char* loss : {"train_loss", "val_loss"}) {
    auto it = report.metrics.find(loss);
    if (it != report.metrics.end() && !std::isfinite(it->second)) {
      trial.last_metric = std::numeric_limits<double>::quiet_NaN();
    }
  }
  // A job that restarted below what its trial reported before (its actor died, the driver
  // was resumed) trains through budgets the results and the tuner have already seen.
  const bool seen = report.budget <= trial.reported + 1e-9 * std::max(1.0, report.budget);
  TunerJournal::Row row;  // its results.jsonl row, written by the record thread
  if (!seen) {
    row = ResultsWriter::Row{report_row(actor, trial, report), trial.full};
    results_->count(row->values, *trial.full);
    test_hold("driver.reported");
    trial.reported = report.budget;
    trial.exploited_from = -1;  // recorded in this row
  }
  if (report.final) {
    if (!report.checkpoint.empty()) record_checkpoint(report.trial, report.checkpoint, report.budget);
    finish_job(actor, report.trial, false, std::move(row), placement_.parks(report.trial));
    if (!report.checkpoint.empty()) on_final_checkpoint(report.trial, report.budget);
    return;
  }
  if (seen) return;
  if (tuning_.on_report(report.trial, report.budget, trial.last_metric, std::move(row)) == tuners::Decision::Stop) {
    send(actor, proto::Stop{report.trial});
    spdlog::debug("trial {} stopped early by the tuner at budget {}", report.trial, report.budget);
    finish_job(actor, report.trial);
  }
}

std::string DriverCore::report_refusal(const proto::Report& report, const TrialState& trial) const {
  if (auto why = Admission::metrics_refusal(report.metrics, false); !why.empty()) return why;
  if (!std::isfinite(report.train_seconds) || report.train_seconds < 0) return "train_seconds is not a duration";
  return Admission::budget_refusal(report.budget, {report.trial, trial.job_budget, trial.resume_budget});
}

ReportRow DriverCore::report_row(const ActorState& actor, const TrialState& trial,
                                 const proto::Report& report) const {
  ReportRow row;
  row.trial = report.trial;
  row.budget = report.budget;
  row.metrics = report.metrics;
  row.final = report.final;
  row.wall_time = seconds_since_start();
  row.train_seconds = report.train_seconds;
  row.actor = actor.id;
  row.unit_size = report.unit_size;
  row.unit = trial.unit;
  row.job_start = trial.job_start;
  row.exploited_from = trial.exploited_from;
  row.exploited_at = trial.exploited_at;
  return row;
}

// `row`: the final report's results line, if it has one.
void DriverCore::finish_job(ActorState& actor, TrialId id, bool failed, TunerJournal::Row row, bool parks) {
  const TrialState& trial = book_.finish(id, failed);
  actor.running.erase(id);
  const bool parked = parks && !failed && !actor.dead;
  placement_.ended(id, parked ? std::optional<int>(actor.id) : std::nullopt);
  if (job_lines_) {
    // One line a job: at 10,000 actors formatting it for the console and driver.log was a
    // twentieth of the loop, so the record thread formats it, at the next commit. The format
    // is compiled here, not parsed at run time.
    const auto& best = results_->best();
    later([id, reached = trial.reached, metric = &config_.metric, value = trial.last_metric,
           best_value = best ? best->value : NAN, best_trial = best ? best->trial : -1,
           done = book_.completed_jobs(), running = book_.running()] {
      spdlog::info("{}", fmt::format(FMT_COMPILE("trial {:>3} reached budget {:g}: {} {:.4f} | best {:.4f} (trial {}) | "
                                                 "{} jobs done, {} running"),
                                     id, reached, *metric, value, best_value, best_trial, done, running));
    });
  }
  tuning_.on_result(id, trial.reached, trial.last_metric, std::move(row), failed);
}

void DriverCore::on_trial_failed(ActorState& actor, const proto::TrialFailed& m) {
  if (!book_.running_on(m.trial, actor.id, m.lease)) return;
  spdlog::warn("trial {} failed on actor {}: {}", m.trial, actor.id, m.message);
  finish_job(actor, m.trial, true);
}

// The trial cannot go on: the tuner hears a failed result.
void DriverCore::tell_failed(const std::optional<TrialBook::Failure>& failure) {
  if (failure) {
    tuning_.on_result(failure->trial, failure->budget, std::numeric_limits<double>::quiet_NaN(), {}, true);
  }
}

// --- resuming (docs/faults.md) -------------------------------------------------------------------

// Jobs that had no result go back to the queue, each from its trial's newest checkpoint.
void DriverCore::restore(const TunerJournal::Recovered& r) {
  std::vector<CheckpointStore::Recorded> recorded;
  for (const auto& c : r.checkpoints) recorded.push_back({c.trial, c.path, c.budget});
  // The journal commits in groups (the loop's commit interval), and an actor's checkpoint
  // file may outlive the reports before it that the killed driver had not committed:
  // resuming from it would skip them. Such a checkpoint is left, unless it is the next
  // report's own. A job resumed from a checkpoint reports above it, and at its budget in any case.
  // A trial the journal does not know at all had its job assigned in the group the driver never
  // committed; it has reported nothing, and its job (the tuner gives it again) starts at 0.
  store_->recover(recorded, [&](TrialId id, double budget) {
    auto it = r.trials.find(id);
    if (it == r.trials.end()) {
      return !(config_.report_every > 0) || budget < config_.report_every * (1 - 1e-9);
    }
    const double job_budget = it->second.job.budget;
    const double eps = 1e-9 * std::max(1.0, job_budget);
    const double next = next_report(config_.report_every, std::max(0.0, it->second.reported), job_budget);
    return budget < next - eps || (std::abs(budget - job_budget) <= eps && next >= job_budget - eps);
  });
  for (const auto& [id, progress] : r.trials) {
    TrialState* trial = book_.remember(progress.job);
    if (!trial) continue;
    trial->reported = progress.reported;
    trial->reached = std::max(0.0, progress.reported);
    trial->last_metric = progress.last_metric;
    trial->job_budget = progress.job.budget;
  }
  book_.restore_counts(r.results, r.failed);
  start_ -= std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(r.wall_time));
  int requeued = 0;
  for (const auto& job : r.in_flight) {
    const auto& progress = r.trials.at(job.trial);
    if (progress.stopped) {
      // The tuner stopped it and the driver died before passing on the result.
      book_.finish(job.trial);
      tuning_.on_result(job.trial, std::max(0.0, progress.reported), progress.last_metric, {}, false);
      continue;
    }
    if (job.from_trial >= 0 && !restore_exploit(job, progress.reported)) continue;
    book_.enqueue(job);
    ++requeued;
  }
  commit();
  spdlog::info("resuming {} from {}: {} report(s) and {} finished job(s) kept, {} job(s) go back to the queue",
               config_.name, journal_->path(), r.rows.size(), r.results, requeued);
}

}  // namespace packtune
