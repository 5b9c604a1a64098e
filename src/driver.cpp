#include "driver.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <deque>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <thread>

#include <spdlog/spdlog.h>

#include "actors/trial_spec.hpp"
#include "local_actors.hpp"
#include "packing/memory_model.hpp"
#include "packing/planner.hpp"
#include "packtune/error.hpp"
#include "results_writer.hpp"
#include "tuners/tuner_registry.hpp"
#include "zmq_channel.hpp"

namespace packtune {
namespace {

using Clock = std::chrono::steady_clock;
namespace proto = protocol;
using tuners::Job;
using tuners::TrialId;

std::atomic<bool> interrupted{false};
extern "C" void on_interrupt(int) { interrupted = true; }

// How many times a trial is restarted after its actor died before it counts as failed.
constexpr int kMaxRestarts = 2;

std::uint64_t trial_seed(std::uint64_t experiment_seed, TrialId trial) {
  std::uint64_t x = experiment_seed * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(trial) + 1;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::string make_endpoint(const std::string& listen) {
  if (listen == "ipc") {
    std::random_device rd;
    return "ipc:///tmp/packtune-" + std::to_string(getpid()) + "-" + std::to_string(rd() % 100000) + ".ipc";
  }
  if (listen == "tcp") return "tcp://127.0.0.1:*";
  return listen;
}

struct ActorState {
  int id = -1;
  std::string identity;
  std::string host;
  std::int64_t pid = 0;
  int local_index = -1;
  std::string device;
  bool ready = false;
  bool dead = false;
  std::int64_t capacity_bytes = 0;
  std::map<TrialId, std::int64_t> running;  // trial -> estimated bytes
  Clock::time_point last_heard;
};

struct TrialState {
  tuners::TrialConfig sampled;  // what the tuner chose
  tuners::TrialConfig full;     // fixed model values overlaid with the sample
  std::uint64_t seed = 0;
  std::int64_t bytes = 0;
  int actor = -1;
  double job_budget = 0;
  double reached = 0;
  double last_metric = std::numeric_limits<double>::quiet_NaN();
  bool stop_requested = false;
  int restarts = 0;
};

class Driver {
 public:
  Driver(const ExperimentConfig& config, const DriverOptions& options)
      : config_(config),
        options_(options),
        tuner_(tuners::TunerRegistry::instance().create(config.tuner, tuner_context(config))),
        context_(1),
        router_(context_, zmq::socket_type::router) {}

  int run() {
    router_.set(zmq::sockopt::linger, 0);
    router_.set(zmq::sockopt::router_mandatory, 1);
    try {
      router_.bind(make_endpoint(config_.listen));
    } catch (const zmq::error_t& e) {
      throw InputError("listen: cannot bind " + config_.listen + " (" + e.what() + ")");
    }
    endpoint_ = router_.get(zmq::sockopt::last_endpoint);
    results_ = std::make_unique<ResultsWriter>(options_.out_dir, config_.source, config_.metric,
                                               config_.mode);
    const int cores = std::max(1u, std::thread::hardware_concurrency());
    const int threads = config_.threads_per_actor > 0 ? config_.threads_per_actor
                                                       : std::max(1, cores / config_.actors);
    spdlog::info("experiment {}: tuner {}, {} trials, {} local actor(s) on {}, {} thread(s) each",
                 config_.name, config_.tuner, config_.trials, config_.actors, config_.device, threads);
    spdlog::info("driver listening on {}; more actors can join with: packtune actor --driver {}",
                 endpoint_, endpoint_);
    local_ = std::make_unique<LocalActors>(endpoint_, options_.out_dir + "/logs", threads);
    local_->spawn(config_.actors);

    start_ = Clock::now();
    auto previous_int = std::signal(SIGINT, on_interrupt);
    auto previous_term = std::signal(SIGTERM, on_interrupt);
    int code = 0;
    try {
      code = loop();
    } catch (...) {
      shutdown_actors();
      std::signal(SIGINT, previous_int);
      std::signal(SIGTERM, previous_term);
      results_->write_best();
      throw;
    }
    std::signal(SIGINT, previous_int);
    std::signal(SIGTERM, previous_term);
    shutdown_actors();
    results_->write_best();
    summarize();
    return code;
  }

 private:
  int loop() {
    auto last_progress = Clock::now();
    auto last_heartbeat = Clock::now();
    while (true) {
      if (interrupted) {
        spdlog::warn("interrupted: stopping the actors; results so far are in {}", options_.out_dir);
        return 130;
      }
      while (auto routed = receive_routed(router_, 50)) {
        handle(routed->first, routed->second);
      }
      reap_local_actors();
      check_heartbeats();
      if (dispatch()) return 0;
      const auto now = Clock::now();
      if (now - last_heartbeat > std::chrono::duration<double>(config_.heartbeat_seconds)) {
        for (auto& [identity, actor] : actors_) {
          if (!actor.dead) send(actor, proto::Heartbeat{});
        }
        last_heartbeat = now;
      }
      if (!options_.quiet && now - last_progress > std::chrono::seconds(15)) {
        progress();
        last_progress = now;
      }
    }
  }

  void send(ActorState& actor, const proto::Message& message) {
    try {
      send_message(router_, actor.identity, message);
    } catch (const zmq::error_t& e) {
      // EHOSTUNREACH: the peer is gone; the heartbeat check will retire it.
      spdlog::debug("cannot send {} to actor {}: {}", proto::verb(message), actor.id, e.what());
    }
  }

  void handle(const std::string& identity, const proto::Message& message) {
    auto it = actors_.find(identity);
    if (auto* hello = std::get_if<proto::Hello>(&message)) {
      if (hello->protocol_version != proto::kProtocolVersion) {
        ActorState stranger;
        stranger.identity = identity;
        send(stranger, proto::Reject{"protocol version " + std::to_string(hello->protocol_version) +
                                     " is not this driver's " +
                                     std::to_string(proto::kProtocolVersion) +
                                     "; run the same packtune build on both ends"});
        return;
      }
      ActorState actor;
      actor.id = next_actor_id_++;
      actor.identity = identity;
      actor.host = hello->host;
      actor.pid = hello->pid;
      actor.local_index = hello->local_index;
      actor.last_heard = Clock::now();
      proto::Welcome welcome;
      welcome.actor_id = actor.id;
      welcome.spec = experiment_spec();
      auto& stored = actors_[identity] = actor;
      send(stored, welcome);
      spdlog::info("actor {} joined from {} (pid {})", actor.id, actor.host, actor.pid);
      return;
    }
    if (it == actors_.end()) {
      spdlog::warn("ignoring {} from an actor that never said Hello", proto::verb(message));
      return;
    }
    ActorState& actor = it->second;
    actor.last_heard = Clock::now();
    if (actor.dead) return;
    std::visit(
        [&](const auto& m) {
          using T = std::decay_t<decltype(m)>;
          if constexpr (std::is_same_v<T, proto::Ready>) {
            actor.ready = true;
            actor.device = m.device;
            spdlog::info("actor {} ready on {}", actor.id, m.device);
          } else if constexpr (std::is_same_v<T, proto::Report>) {
            on_report(actor, m);
          } else if constexpr (std::is_same_v<T, proto::TrialFailed>) {
            on_trial_failed(actor, m.trial, m.message);
          } else if constexpr (std::is_same_v<T, proto::ActorFailed>) {
            actor_failures_.push_back(m.message);
            spdlog::error("actor {} failed: {}", actor.id, m.message);
            retire(actor, "it failed: " + m.message);
          } else if constexpr (std::is_same_v<T, proto::Heartbeat>) {
          } else {
            spdlog::warn("unexpected {} from actor {}", proto::verb(message), actor.id);
          }
        },
        message);
  }

  proto::ExperimentSpec experiment_spec() const {
    proto::ExperimentSpec s;
    s.data_name = config_.data.name;
    s.data_dir = std::filesystem::absolute(config_.data.dir).string();
    s.train_size = config_.data.train_size;
    s.validation_size = config_.data.validation_size;
    s.device = config_.device;
    s.budget_unit = config_.budget_unit;
    s.report_every = config_.report_every;
    s.data_seed = config_.seed;
    s.heartbeat_seconds = config_.heartbeat_seconds;
    s.fuse = config_.fuse;
    return s;
  }

  void on_report(ActorState& actor, const proto::Report& report) {
    auto t = trials_.find(report.trial);
    if (t == trials_.end() || t->second.actor != actor.id) return;  // stale: stopped or moved
    TrialState& trial = t->second;
    ReportRow row;
    row.trial = report.trial;
    row.budget = report.budget;
    row.metrics = report.metrics;
    row.final = report.final;
    row.wall_time = seconds_since_start();
    row.train_seconds = report.train_seconds;
    row.actor = actor.id;
    results_->write(row, trial.full);
    trial.reached = report.budget;
    auto metric = report.metrics.find(config_.metric);
    trial.last_metric = metric == report.metrics.end() ? std::numeric_limits<double>::quiet_NaN()
                                                       : metric->second;
    if (report.final) {
      finish_job(actor, report.trial);
      return;
    }
    if (tuner_->on_report(report.trial, report.budget, trial.last_metric) == tuners::Decision::Stop) {
      send(actor, proto::Stop{report.trial});
      spdlog::info("trial {} stopped early by the tuner at budget {}", report.trial, report.budget);
      finish_job(actor, report.trial);
    }
  }

  void finish_job(ActorState& actor, TrialId id) {
    TrialState& trial = trials_.at(id);
    actor.running.erase(id);
    trial.actor = -1;
    ++completed_jobs_;
    if (!options_.quiet) {
      const auto& best = results_->best();
      spdlog::info("trial {:>3} reached budget {:g}: {} {:.4f} | best {:.4f} (trial {}) | {} jobs done, {} running",
                   id, trial.reached, config_.metric, trial.last_metric, best ? best->value : NAN,
                   best ? best->trial : -1, completed_jobs_, running_jobs());
    }
    tuner_->on_result(id, trial.reached, trial.last_metric);
  }

  void on_trial_failed(ActorState& actor, TrialId id, const std::string& message) {
    auto t = trials_.find(id);
    if (t == trials_.end() || t->second.actor != actor.id) return;
    spdlog::warn("trial {} failed on actor {}: {}", id, actor.id, message);
    ++failed_trials_;
    t->second.last_metric = std::numeric_limits<double>::quiet_NaN();
    finish_job(actor, id);
  }

  // Takes an actor out of service; its trials go back to the queue and start again.
  void retire(ActorState& actor, const std::string& why) {
    if (actor.dead) return;
    actor.dead = true;
    actor.ready = false;
    for (const auto& [id, bytes] : actor.running) {
      TrialState& trial = trials_.at(id);
      trial.actor = -1;
      if (++trial.restarts > kMaxRestarts) {
        spdlog::warn("trial {} lost its actor {} times; counting it as failed", id, trial.restarts);
        ++failed_trials_;
        ++completed_jobs_;
        tuner_->on_result(id, trial.reached, std::numeric_limits<double>::quiet_NaN());
      } else {
        spdlog::warn("trial {} goes back to the queue (restart {} of {})", id, trial.restarts, kMaxRestarts);
        pending_.push_front({Job::Kind::Start, id, trial.sampled, trial.job_budget});
      }
    }
    actor.running.clear();
    spdlog::warn("actor {} is out of service: {}", actor.id, why);
  }

  void reap_local_actors() {
    for (const auto& exit : local_->reap()) {
      for (auto& [identity, actor] : actors_) {
        if (actor.local_index == exit.local_index && !actor.dead) {
          retire(actor, "its process " + exit.how + "; see " + local_->log_path(exit.local_index));
        }
      }
      if (!actors_joined(exit.local_index)) {
        actor_failures_.push_back("local actor " + std::to_string(exit.local_index) + " " + exit.how +
                                  " before joining; see " + local_->log_path(exit.local_index));
      }
    }
  }

  bool actors_joined(int local_index) const {
    for (const auto& [identity, actor] : actors_) {
      if (actor.local_index == local_index) return true;
    }
    return false;
  }

  void check_heartbeats() {
    const auto limit = std::chrono::duration<double>(config_.actor_timeout_seconds);
    for (auto& [identity, actor] : actors_) {
      if (!actor.dead && Clock::now() - actor.last_heard > limit) {
        retire(actor, "no message for " + std::to_string(static_cast<int>(config_.actor_timeout_seconds)) + " s");
      }
    }
  }

  std::vector<packing::ActorLoad> loads() const {
    std::vector<packing::ActorLoad> out;
    for (const auto& [identity, actor] : actors_) {
      if (!actor.ready || actor.dead) continue;
      packing::ActorLoad load;
      load.actor = actor.id;
      load.members = static_cast<int>(actor.running.size());
      load.max_members = config_.max_pack;
      load.capacity_bytes = actor.capacity_bytes;
      for (const auto& [id, bytes] : actor.running) load.used_bytes += bytes;
      out.push_back(load);
    }
    return out;
  }

  ActorState* actor_by_id(int id) {
    for (auto& [identity, actor] : actors_) {
      if (actor.id == id) return &actor;
    }
    return nullptr;
  }

  std::int64_t estimate_bytes(const tuners::TrialConfig& full) const {
    const auto spec = actors::parse_trial_spec(full, "trial");
    const auto shape = actors::model_shape(spec.model, 1, 28, 28, 10);
    packing::TrialShape s;
    s.parameters = shape.parameters;
    s.activations_per_sample = shape.activations_per_sample;
    s.batch_size = spec.batch_size;
    s.optimizer_slots = spec.optimizer.name == "sgd" ? (spec.optimizer.momentum > 0 ? 1 : 0) : 2;
    return packing::estimate_bytes(s);
  }

  // The first jobs wait until every local actor is ready (or a grace period passed), so
  // they are spread over all actors instead of filling whichever started first.
  bool local_actors_settled() {
    if (settled_) return true;
    int ready = 0;
    for (const auto& [identity, actor] : actors_) ready += actor.local_index >= 0 && (actor.ready || actor.dead);
    settled_ = ready + static_cast<int>(actor_failures_.size()) >= config_.actors ||
               Clock::now() - start_ > std::chrono::seconds(30);
    return settled_;
  }

  // Hands out work while actors have room. Returns true when the experiment is over.
  bool dispatch() {
    while (local_actors_settled()) {
      auto load = loads();
      bool room = false;
      for (const auto& l : load) room = room || l.members < l.max_members;
      if (!room) break;
      if (pending_.empty()) {
        Job job = tuner_->next_job();
        if (job.kind == Job::Kind::Wait) break;
        if (job.kind == Job::Kind::Finished) {
          if (running_jobs() == 0) return true;
          break;
        }
        pending_.push_back(std::move(job));
      }
      Job& job = pending_.front();
      auto [it, fresh] = trials_.try_emplace(job.trial);
      TrialState& trial = it->second;
      if (fresh) {
        trial.sampled = job.config;
        trial.full = config_.model;
        for (const auto& [k, v] : job.config) trial.full[k] = v;
        trial.seed = trial_seed(config_.seed, job.trial);
        try {
          trial.bytes = estimate_bytes(trial.full);
        } catch (const InputError& e) {
          spdlog::warn("trial {} has an invalid config: {}", job.trial, e.what());
          ++failed_trials_;
          ++completed_jobs_;
          pending_.pop_front();
          tuner_->on_result(it->first, 0, std::numeric_limits<double>::quiet_NaN());
          continue;
        }
      }
      if (job.kind == Job::Kind::Resume && !resume_note_shown_) {
        spdlog::info("promoted trials retrain from scratch up to their new budget (checkpoints are not implemented yet)");
        resume_note_shown_ = true;
      }
      auto target = packing::place_trial(load, trial.bytes);
      if (!target) {
        if (!packing::fits_anywhere(load, trial.bytes)) {
          spdlog::warn("trial {} needs about {} MiB, more than any actor has; counting it as failed",
                       job.trial, trial.bytes >> 20);
          ++failed_trials_;
          ++completed_jobs_;
          const auto id = job.trial;
          pending_.pop_front();
          tuner_->on_result(id, 0, std::numeric_limits<double>::quiet_NaN());
          continue;
        }
        break;
      }
      ActorState* actor = actor_by_id(*target);
      trial.actor = actor->id;
      trial.job_budget = job.budget;
      trial.reached = 0;
      actor->running[job.trial] = trial.bytes;
      send(*actor, proto::Assign{job.trial, trial.full, job.budget, trial.seed});
      pending_.pop_front();
    }
    if (running_jobs() == 0 && pending_.empty() && live_actors() == 0 && local_->running() == 0) {
      std::string why = actor_failures_.empty() ? "every actor exited" : actor_failures_.back();
      throw Error("no actor is left to train on: " + why);
    }
    return false;
  }

  int running_jobs() const {
    int n = 0;
    for (const auto& [identity, actor] : actors_) n += static_cast<int>(actor.running.size());
    return n;
  }

  int live_actors() const {
    int n = 0;
    for (const auto& [identity, actor] : actors_) n += !actor.dead;
    return n;
  }

  double seconds_since_start() const {
    return std::chrono::duration<double>(Clock::now() - start_).count();
  }

  void progress() const {
    const auto& best = results_->best();
    spdlog::info("[{:.0f} s] {} jobs done, {} running, {} actor(s) live; best {} {:.4f} (trial {})",
                 seconds_since_start(), completed_jobs_, running_jobs(), live_actors(), config_.metric,
                 best ? best->value : NAN, best ? best->trial : -1);
  }

  void shutdown_actors() {
    for (auto& [identity, actor] : actors_) {
      if (!actor.dead) send(actor, proto::Shutdown{});
    }
    if (local_) local_->wait_all(10);
  }

  void summarize() const {
    const auto& best = results_->best();
    std::printf("finished %s in %.1f s: %lld jobs, %d failed trials; results in %s\n",
                config_.name.c_str(), seconds_since_start(), static_cast<long long>(completed_jobs_),
                failed_trials_, options_.out_dir.c_str());
    if (best) {
      std::printf("best trial %lld: %s = %.4f at budget %g\n  config: %s\n",
                  static_cast<long long>(best->trial), config_.metric.c_str(), best->value, best->budget,
                  tuners::to_json(best->config).dump().c_str());
    } else {
      std::printf("no trial reported %s\n", config_.metric.c_str());
    }
    std::fflush(stdout);
  }

  ExperimentConfig config_;
  DriverOptions options_;
  std::unique_ptr<tuners::Tuner> tuner_;
  zmq::context_t context_;
  zmq::socket_t router_;
  std::string endpoint_;
  std::unique_ptr<ResultsWriter> results_;
  std::unique_ptr<LocalActors> local_;
  std::map<std::string, ActorState> actors_;  // by ZeroMQ identity
  std::map<TrialId, TrialState> trials_;
  std::deque<Job> pending_;
  std::vector<std::string> actor_failures_;
  int next_actor_id_ = 0;
  std::int64_t completed_jobs_ = 0;
  int failed_trials_ = 0;
  bool resume_note_shown_ = false;
  bool settled_ = false;
  Clock::time_point start_;
};

}  // namespace

int run_experiment(const ExperimentConfig& config, const DriverOptions& options) {
  Driver driver(config, options);
  return driver.run();
}

}  // namespace packtune
