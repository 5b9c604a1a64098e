#include "driver/driver.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <random>
#include <regex>
#include <thread>

#include <spdlog/spdlog.h>

#include "actors/checkpoint_file.hpp"
#include "actors/trial_spec.hpp"
#include "driver/actor_registry.hpp"
#include "driver/checkpoint_store.hpp"
#include "driver/journal.hpp"
#include "driver/profile_gate.hpp"
#include "driver/live_report.hpp"
#include "driver/rung_replan.hpp"
#include "driver/status_display.hpp"
#include "driver/trial_book.hpp"
#include "driver/tuner_journal.hpp"
#include "experiment/planner_setup.hpp"
#include "experiment/results_writer.hpp"
#include "experiment/trial_shape.hpp"
#include "node/actor_supervisor.hpp"
#include "node/node_agent.hpp"
#include "packing/memory_model.hpp"
#include "packing/planner.hpp"
#include "packtune/error.hpp"
#include "packtune/test_hold.hpp"
#include "protocol/curve_keys.hpp"
#include "protocol/zmq_channel.hpp"
#include "tuners/tuner_registry.hpp"

namespace packtune {
namespace {

using Clock = std::chrono::steady_clock;
namespace proto = protocol;

// One driver per results folder: a second one (a --resume while the run still goes on) would
// cut the journal and results.jsonl the first is writing. The kernel drops the lock when the
// process ends, however it ends; actors do not inherit it (close-on-exec).
class FolderLock {
 public:
  explicit FolderLock(const std::string& dir) : fd_(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    if (fd_ < 0) throw Error("cannot open the results folder " + dir + ": " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
    const int error = errno;
    ::close(fd_);
    if (error == EWOULDBLOCK) {
      throw InputError(dir + ": another packtune driver is running this experiment; wait for it to end, or stop it "
                       "(Ctrl-C) and then run `packtune run --resume " + dir + "`");
    }
    throw Error("cannot lock the results folder " + dir + ": " + std::strerror(error));
  }
  ~FolderLock() { ::close(fd_); }
  // Whether `dir` is still the folder this locked: not deleted, not moved away and replaced.
  bool still_at(const std::string& dir) const {
    struct stat locked {}, now {};
    if (::fstat(fd_, &locked) != 0 || locked.st_nlink == 0) return false;
    return ::stat(dir.c_str(), &now) == 0 && now.st_dev == locked.st_dev && now.st_ino == locked.st_ino;
  }
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_;
};
using tuners::Job;
using tuners::TrialId;

std::atomic<bool> interrupted{false};
extern "C" void on_interrupt(int) { interrupted = true; }

// Ctrl-C and SIGTERM are caught for the driver's whole life, from before it binds its socket
// until after it removed it: a signal at any point ends in a stop that leaves nothing in /tmp.
// Until the loop runs they only mark the run as interrupted.
class SignalsCaught {
 public:
  SignalsCaught() : int_(std::signal(SIGINT, on_interrupt)), term_(std::signal(SIGTERM, on_interrupt)) {}
  ~SignalsCaught() {
    std::signal(SIGINT, int_);
    std::signal(SIGTERM, term_);
  }
  SignalsCaught(const SignalsCaught&) = delete;
  SignalsCaught& operator=(const SignalsCaught&) = delete;

 private:
  void (*int_)(int);
  void (*term_)(int);
};

// A driver killed with -9 (or by the OOM killer) leaves its ipc socket (make_endpoint) and its
// actors' work folder (fresh_work_dir) in the temporary folder ($TMPDIR, else /tmp); each
// driver removes those of drivers that are gone. A pid that is alive, or a file of another
// user (whose driver may live in another pid namespace sharing /tmp), is left alone.
void remove_files_of_gone_drivers() {
  namespace fs = std::filesystem;
  static const std::regex left_by_driver(R"(packtune-(\d{1,9})-\d+\.ipc|packtune-driver-(\d{1,9}))");
  std::error_code ec;
  fs::directory_iterator it(temp_folder(), ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const auto name = it->path().filename().string();
    std::smatch m;
    if (!std::regex_match(name, m, left_by_driver)) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || st.st_uid != ::geteuid()) continue;
    const pid_t pid = std::stoi(m[1].matched ? m[1].str() : m[2].str());
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code removed;
    fs::remove_all(it->path(), removed);
    if (!removed) spdlog::info("removed {}, left by driver {}, which is gone", it->path().string(), pid);
  }
}

// With keep_checkpoints "needed", the last checkpoints of this many best trials survive a run.
constexpr int kKeepBestCheckpoints = 3;
// Messages handled between two dispatches at most: a flood of them (1,000 actors) must not
// hold back the jobs they free.
constexpr int kReceiveBatch = 64;
// The first budget above `reported` at which an actor reports in a job to `job_budget`
// (pack_executor.cpp: every `report_every` below the job's budget, then at the budget).
double next_report(double report_every, double reported, double job_budget) {
  const double eps = 1e-9 * std::max(1.0, job_budget);
  if (!(report_every > 0)) return job_budget;
  const double next = (std::floor((reported + eps) / report_every) + 1) * report_every;
  return next < job_budget - eps ? next : job_budget;
}

// The journal is made durable at most this often while the loop is busy (group commit): an
// fdatasync per loop turn was a fifth of the driver's CPU under 1,000 actors (850 a second in
// load_bench). A crash loses at most this much more of the journal's suffix, which --resume
// already tolerates; an idle loop still commits on its first turn.
constexpr auto kCommitInterval = std::chrono::milliseconds(10);

std::string make_endpoint(const std::string& listen) {
  if (listen == "ipc") {
    std::random_device rd;
    return "ipc://" + (temp_folder() / ("packtune-" + std::to_string(getpid()) + "-" + std::to_string(rd() % 100000) + ".ipc")).string();
  }
  if (listen == "tcp") return "tcp://127.0.0.1:*";
  return listen;
}

class Driver {
 public:
  Driver(const ExperimentConfig& config, const DriverOptions& options)
      : config_(config),
        options_(options),
        tuner_(tuners::TunerRegistry::instance().create(config.tuner, tuner_context(config))),
        tuning_(*tuner_, nullptr),
        setup_(planner_setup(config)),
        planner_(make_planner(config, setup_)),
        registry_({config.actor_timeout_seconds, config.actor_timeout_seconds}),
        profiles_(planner_, plan_, registry_, {config.fuse == packing::FuseMode::Auto && config.max_pack > 1, config.max_pack}),
        book_(config.model, config.seed,
              [padded = fuse_pads_widths(config)](const tuners::TrialConfig& full) {
                return trial_shape(actors::parse_trial_spec(full, "trial"), {}, padded);
              }),
        context_(1),
        router_(context_, zmq::socket_type::router) {
    tuning_.check_jobs(tuner_->name(), config.max_budget);
    train_images_ = training_images(config);
  }

  // ZeroMQ leaves the socket file of an ipc endpoint behind; one per run piles up in /tmp.
  // The actors' work folder goes too, whatever ended the run (shutdown_actors removes it on
  // the usual paths).
  ~Driver() {
    if (!ipc_file_.empty()) ::unlink(ipc_file_.c_str());
    if (local_) local_->stop(0);
    remove_work_dir();
  }

  void remove_work_dir() {
    if (local_work_dir_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(local_work_dir_, ec);
  }

  int run() {
    // Before anything of the folder is read or written.
    if (options_.resume) folder_lock_ = std::make_unique<FolderLock>(options_.out_dir);
    router_.set(zmq::sockopt::linger, 0);
    router_.set(zmq::sockopt::router_mandatory, 1);
    const auto endpoint = make_endpoint(config_.listen);
    // Keys, where given, are used on every endpoint: nodes and actors started with --keys
    // speak CURVE, and a driver that dropped it on ipc or loopback could not hear them.
    if (!config_.keys.empty()) {
      curve_ = std::make_unique<CurveServer>(context_, router_, load_driver_keys(config_.keys));
    } else if (reaches_beyond_this_machine(endpoint)) {
      // Anyone who reaches the port would otherwise get trial configs and have their
      // reports taken as results.
      if (!config_.insecure) {
        throw InputError("listen: " + endpoint + " can be reached from other machines; make keys with `packtune keys DIR` "
                         "and set \"keys\": \"DIR\" (actors then need --keys DIR), or set \"insecure\": true");
      } else {
        spdlog::warn("listening on {} without authentication (\"insecure\": true): any peer that reaches the port "
                     "can take trials and send results", endpoint);
      }
    }
    try {
      router_.bind(endpoint);
    } catch (const zmq::error_t& e) {
      throw InputError("listen: cannot bind " + config_.listen + " (" + e.what() + ")");
    }
    endpoint_ = router_.get(zmq::sockopt::last_endpoint);
    if (endpoint_.rfind("ipc://", 0) == 0) ipc_file_ = endpoint_.substr(6);
    std::optional<TunerJournal::Recovered> recovered;
    if (options_.resume) {
      auto reopened = Journal::reopen(journal_path(options_.out_dir));
      try {
        recovered = tuning_.replay(reopened.entries);
      } catch (const InputError& e) {
        throw InputError(journal_path(options_.out_dir) + ": " + e.what());
      } catch (const Error& e) {
        throw Error(journal_path(options_.out_dir) + ": " + e.what());
      }
      if (const auto ran = reopened.entries.front().value("config", nlohmann::json());
          !ran.is_null() && ResultsWriter::restore_config(options_.out_dir, ran)) {
        spdlog::warn("{}/config.json was damaged or missing; written again from the journal", options_.out_dir);
      }
      if (recovered->finished) {
        std::printf("%s in %s finished already (%lld jobs); nothing to resume\n", config_.name.c_str(),
                    options_.out_dir.c_str(), static_cast<long long>(recovered->finished_jobs));
        return 0;
      }
      journal_ = std::make_unique<Journal>(std::move(reopened.journal));
      results_ = std::make_unique<ResultsWriter>(options_.out_dir, recovered->rows, config_.metric, config_.mode);
    } else {
      // Nothing goes into the folder before its lock is held: a second driver started on the
      // same fresh --out would overwrite config.json and cut the first's results.jsonl.
      const bool created = ResultsWriter::create_folder(options_.out_dir);
      folder_lock_ = std::make_unique<FolderLock>(options_.out_dir);
      try {
        ResultsWriter::check_fresh(options_.out_dir);
      } catch (const InputError&) {
        std::error_code ec;
        if (created) std::filesystem::remove(options_.out_dir, ec);  // left as it was found: absent
        throw;
      }
      results_ = std::make_unique<ResultsWriter>(options_.out_dir, config_.source, config_.metric, config_.mode);
      journal_ = std::make_unique<Journal>(Journal::create(
          journal_path(options_.out_dir), {{"packtune_journal", 1}, {"name", config_.name}, {"config", config_.source}}));
    }
    tuning_.set_journal(journal_.get());
    // Before any thread that logs starts: on a terminal the display takes the log's sinks.
    display_ = std::make_unique<StatusDisplay>(StatusDisplay::choose(options_.quiet));
    // The lock outlives the report (declared before it), and still_at only reads its fd.
    report_ = std::make_unique<LiveReport>(
        options_.out_dir, [lock = folder_lock_.get(), dir = options_.out_dir] { return lock->still_at(dir); });
    spdlog::info("charts: {}/report.html, rewritten every few seconds while the experiment runs", options_.out_dir);
    const int cores = std::max(1u, std::thread::hardware_concurrency());
    const int threads = local_actor_threads(config_);
    const auto limit = trial_limit(config_);
    if (config_.device == "cpu" && config_.actors > cores) {
      // Each actor is a process with LibTorch and the data set: beyond the cores they only take
      // turns, and hundreds of them can exhaust memory before any trains.
      spdlog::warn("{} local actors on {} cores: they take turns on the cores and each holds the data set; one "
                   "actor per core or fewer trains as fast", config_.actors, cores);
    }
    spdlog::info("experiment {}: tuner {}, {}, {} local actor(s) on {}, {} thread(s) each", config_.name,
                 config_.tuner, limit > 0 ? std::to_string(limit) + " trials" : std::string("its whole schedule"),
                 config_.actors, config_.device, threads);
    // What a user reproducing a run needs to know: whether packing can show in the numbers.
    spdlog::info("{}{}", config_.fuse == packing::FuseMode::Always
                           ? "fuse always: trials of unlike widths share units, padded; which trials share one "
                             "depends on timing and can change a trial's last bits (docs/reproducibility.md)"
                       : config_.fuse == packing::FuseMode::Never
                           ? "fuse never: every trial trains as a plain LibTorch model"
                           : "fuse auto: units hold trials of one width and a trial alone is a unit of one, so "
                             "packing never changes a trial's numbers (docs/reproducibility.md)",
                 config_.fuse == packing::FuseMode::Auto && config_.device != "cpu" ? "; checked on CPUs, not yet on GPUs" : "");
    for (const auto& warning : tuner_->warnings()) spdlog::warn("{}", warning);
    spdlog::info("driver listening on {}; machines join with: packtune node --driver {}{}", endpoint_, endpoint_,
                 curve_ ? " --keys DIR" : "");
    // Uploads come from peers: HDF5 reads them in a child process, which a damaged file may crash.
    store_ = std::make_unique<CheckpointStore>(checkpoint_dir(), TransferOptions{},
                                               [](const std::string& path) { actors::verify_checkpoint(path); });
    store_->set_keep_all(config_.keep_checkpoints == KeepCheckpoints::All);
    start_ = Clock::now();
    if (recovered) restore(*recovered);
    start_local_actors(threads);

    int code = 0;
    try {
      code = loop();
      // Signals stay caught until best.json is written: scancel signals the driver and the batch
      // script, which passes SIGTERM on too, and that second signal must not cut the stop short.
      // A test that was cut short is not a finished run: the journal gets no `finished`, so
      // --resume finds the tuner done and runs only the test.
      if (code == 0) code = test_best();
      check_folder(true);
    } catch (...) {
      shutdown_actors();
      // A replaced folder is someone else's now: nothing more is written into it.
      if (!folder_lost_) {
        try {
          // What the journal took so far is kept for --resume; a full disk may refuse even that.
          commit();
          results_->write_best();
        } catch (const Error& e) {
          spdlog::warn("{}", e.what());
        }
        report_->finish();
      }
      throw;
    }
    shutdown_actors();
    if (code == 0) tuning_.on_finished(book_.completed_jobs());
    commit();
    results_->write_best();
    report_written_ = report_->finish();
    display_->finish(status());
    summarize(code == 0);
    if (code != 0) std::printf("continue it with: packtune run --resume %s\n", options_.out_dir.c_str());
    if (code == 0 && !results_->best() && book_.failed_trials() > 0) {
      // Every trial failed (too little memory, a model the device cannot run): not a result.
      std::fprintf(stderr, "packtune: error: every trial failed%s\n",
                   book_.last_failure().empty() ? "" : ("; the last: " + book_.last_failure()).c_str());
      return 1;
    }
    return code;
  }

 private:
  int loop() {
    auto last_heartbeat = Clock::now();
    while (true) {
      if (interrupted) {
        spdlog::warn("interrupted: stopping the actors; results so far are in {}; continue with `packtune run "
                     "--resume {}`", options_.out_dir, options_.out_dir);
        return 130;
      }
      // Waits up to 50 ms for a message, then takes only those already queued: under load
      // messages never pause for 50 ms, and jobs go out after each batch, not after a pause.
      long wait_ms = 50;
      if (journal_ && journal_->dirty()) {
        // Entries wait for the next commit: wake for it even if no message comes.
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(last_commit_ + kCommitInterval - Clock::now());
        wait_ms = std::clamp<long>(static_cast<long>(left.count()), 1, wait_ms);
      }
      for (int taken = 0; taken < kReceiveBatch; ++taken, wait_ms = 0) {
        std::optional<Routed> routed;
        try {
          routed = receive_routed(router_, wait_ms);
        } catch (const Error& e) {
          // Bytes that are not a message (a stranger on an open port) must not end the run.
          spdlog::warn("ignoring a message: {}", e.what());
          continue;
        }
        if (!routed) break;
        // Checkpoint transfers come from an actor's transfer socket, not its own.
        if (!store_->handle(router_, *routed)) handle(routed->identity, routed->message);
      }
      store_->tick(router_);
      poll_local_actors();
      check_heartbeats();
      check_folder();
      release(profiles_.expire(Clock::now()));
      const bool over = dispatch();
      const auto now = Clock::now();
      if (over || now - last_commit_ >= kCommitInterval) {
        commit();
        last_commit_ = now;
        // Fault tests kill the driver here: a result is journaled and jobs run on.
        if (book_.completed_jobs() > 0) test_hold("driver.result");
      }
      if (over) return 0;
      if (now - last_heartbeat > std::chrono::duration<double>(config_.heartbeat_seconds)) {
        // An actor that got an Assign or anything else since the last round needs no heartbeat.
        for (auto& [identity, actor] : registry_.actors()) {
          if (!actor.dead && now - actor.last_sent > std::chrono::duration<double>(config_.heartbeat_seconds)) {
            send(actor, proto::Heartbeat{});
          }
        }
        for (const auto& [id, node] : registry_.nodes()) {
          if (id != 0 && !node.dead) send_to(node.identity, proto::Heartbeat{}, "node " + std::to_string(id));
        }
        last_heartbeat = now;
      }
      if (display_->due(now)) display_->show(status(), now);
      report_->tick(now);
    }
  }

  void send(ActorState& actor, const proto::Message& message) {
    send_to(actor.identity, message, "actor " + std::to_string(actor.id));
    actor.last_sent = Clock::now();
  }

  void send_to(const std::string& identity, const proto::Message& message, const std::string& whom) {
    try {
      send_message(router_, identity, message);
    } catch (const zmq::error_t& e) {
      // EHOSTUNREACH: the peer is gone; the heartbeat check will retire it.
      spdlog::debug("cannot send {} to {}: {}", proto::verb(message), whom, e.what());
    }
  }

  // A peer of another protocol version is refused before anything else is read from it.
  template <class FirstMessage>
  bool refuse(const std::string& identity, const FirstMessage& hello) {
    const auto why = proto::refusal(hello);
    if (why.empty()) return false;
    spdlog::warn("refused a {} from {}: {}", proto::verb(proto::Message{hello}), hello.host, why);
    send_to(identity, proto::Reject{why}, "a refused peer");
    return true;
  }

  void handle(const std::string& identity, const proto::Message& message) {
    if (auto* hello = std::get_if<proto::NodeHello>(&message)) {
      if (refuse(identity, *hello)) return;
      const auto& node = registry_.add_node(identity, *hello, Clock::now());
      send_to(identity, proto::NodeWelcome{proto::kProtocolVersion, node.id, config_.heartbeat_seconds},
              "node " + std::to_string(node.id));
      spdlog::info("node {} joined from {} (pid {}): {} actor(s), {} core(s), {} MiB memory{}", node.id, node.host,
                   node.pid, node.actors, node.cores, node.memory_bytes >> 20, describe_devices(node.devices));
      return;
    }
    if (auto* node = registry_.node(identity)) {
      node->last_heard = Clock::now();
      if (node->dead) {
        registry_.revive_node(*node);
        spdlog::warn("node {} on {} is heard again", node->id, node->host);
      }
      on_node_message(*node, message);
      return;
    }
    if (auto* hello = std::get_if<proto::Hello>(&message)) {
      if (refuse(identity, *hello)) return;
      auto& actor = registry_.add_actor(identity, *hello, Clock::now());
      proto::Welcome welcome;
      welcome.actor_id = actor.id;
      welcome.spec = experiment_spec();
      send(actor, welcome);
      spdlog::info("actor {} joined from {} (pid {}{})", actor.id, actor.host, actor.pid,
                   actor.node_id >= 0 ? fmt::format(", node {} slot {}", actor.node_id, actor.local_index) : "");
      return;
    }
    ActorState* found = registry_.actor(identity);
    if (!found) {
      // A node or actor of the driver this one resumed (--resume after a kill): it has jobs
      // and ids this driver never gave. Told once, it drops them and says Hello again.
      if (asked_to_hello_.insert(identity).second) {
        spdlog::info("a peer this driver does not know sent {}; asking it to join again", proto::verb(message));
        send_to(identity, proto::Rejoin{"the driver was restarted (packtune run --resume) and does not know this "
                                        "peer; its jobs went back to the queue"},
                "an unknown peer");
      }
      return;
    }
    ActorState& actor = *found;
    actor.last_heard = Clock::now();
    if (actor.dead) {
      ask_to_rejoin(actor, message);
      return;
    }
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
            capacities_stale_ = true;
            spdlog::info("actor {} ready on {}", actor.id, m.device);
            explain_units(m.device);
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
            release(profiles_.on_profiled(actor.id, m));
          } else if constexpr (std::is_same_v<T, proto::Tested>) {
            if (testing_ && testing_->actor == actor.id && m.trial == testing_->trial) testing_->answer = m;
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
    s.fuse = to_string(config_.fuse);
    s.checkpoint_dir = store_->dir();
    s.store_token = store_->token();
    s.actor_memory_bytes = config_.actor_memory;
    s.checkpoint_every_seconds = config_.checkpoint_every;
    return s;
  }

  void on_report(ActorState& actor, const proto::Report& report) {
    TrialState* found = book_.running_on(report.trial, actor.id, report.lease);
    if (!found) return;  // stale: stopped, or given to another actor since
    TrialState& trial = *found;
    check_resumed(report, trial);
    if (report.final && report.disk_full) {
      // The job's report waits for its checkpoint; a resume re-runs the job from its last one.
      throw Error(report.checkpoint_error + "; the experiment stops: free space there, then continue with "
                  "`packtune run --resume " + options_.out_dir + "`");
    }
    trial.reached = report.budget;
    auto metric = report.metrics.find(config_.metric);
    trial.last_metric = metric == report.metrics.end() ? std::numeric_limits<double>::quiet_NaN()
                                                       : metric->second;
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
    nlohmann::json row;
    if (!seen) {
      row = ResultsWriter::line(report_row(actor, trial, report), trial.full);
      results_->append(row);
      test_hold("driver.reported");
      trial.reported = report.budget;
    }
    if (report.final) {
      if (!report.checkpoint.empty()) record_checkpoint(report.trial, report.checkpoint, report.budget);
      finish_job(actor, report.trial, false, row);
      if (!report.checkpoint.empty()) on_final_checkpoint(report.trial, report.budget);
      return;
    }
    if (seen) return;
    if (tuning_.on_report(report.trial, report.budget, trial.last_metric, row) == tuners::Decision::Stop) {
      send(actor, proto::Stop{report.trial});
      spdlog::info("trial {} stopped early by the tuner at budget {}", report.trial, report.budget);
      finish_job(actor, report.trial);
    }
  }

  ReportRow report_row(const ActorState& actor, const TrialState& trial, const proto::Report& report) const {
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
    return row;
  }

  // `row`: the final report's results line, if it has one.
  void finish_job(ActorState& actor, TrialId id, bool failed = false, const nlohmann::json& row = nullptr) {
    const TrialState& trial = book_.finish(id, failed);
    actor.running.erase(id);
    planner_.remove(plan_, id);
    if (display_->mode() == StatusDisplay::Mode::Lines) {  // the table shows it otherwise
      const auto& best = results_->best();
      spdlog::info("trial {:>3} reached budget {:g}: {} {:.4f} | best {:.4f} (trial {}) | {} jobs done, {} running",
                   id, trial.reached, config_.metric, trial.last_metric, best ? best->value : NAN,
                   best ? best->trial : -1, book_.completed_jobs(), running_jobs());
    }
    tuning_.on_result(id, trial.reached, trial.last_metric, row, failed);
  }

  // The store holds the trial's checkpoint at `budget`; the journal says so for --resume.
  void record_checkpoint(TrialId trial, const std::string& path, double budget) {
    store_->record(trial, path, budget);
    tuning_.on_checkpoint(trial, path, budget);
  }

  // A checkpoint inside a running job: a restart of the job resumes from it.
  void on_checkpointed(const ActorState& actor, const proto::Checkpointed& m) {
    if (!book_.running_on(m.trial, actor.id, m.lease)) return;
    record_checkpoint(m.trial, m.path, m.budget);
    spdlog::debug("trial {} checkpointed at budget {:g} on actor {}", m.trial, m.budget, actor.id);
  }

  void on_trial_failed(ActorState& actor, const proto::TrialFailed& m) {
    if (!book_.running_on(m.trial, actor.id, m.lease)) return;
    spdlog::warn("trial {} failed on actor {}: {}", m.trial, actor.id, m.message);
    finish_job(actor, m.trial, true);
  }

  // A retired actor speaks again: a partition healed, or it was only slow. Its jobs run
  // elsewhere now, so what it says of them is refused; it drops them and joins anew.
  void ask_to_rejoin(ActorState& actor, const proto::Message& message) {
    if (std::holds_alternative<proto::Report>(message) || std::holds_alternative<proto::TrialFailed>(message)) {
      ++refused_reports_;
      spdlog::info("refusing {} from retired actor {}: its jobs were given to other actors", proto::verb(message),
                   actor.id);
    }
    if (actor.asked_to_rejoin) return;
    actor.asked_to_rejoin = true;
    spdlog::warn("actor {} on {} is heard again after it was retired; it drops its pack and rejoins", actor.id,
                 actor.host);
    send(actor, proto::Rejoin{"it was silent for more than actor_timeout_seconds; its jobs were given to other actors"});
  }

  // Takes an actor out of service; its trials go back to the queue and start again.
  void retire(ActorState& actor, const std::string& why) {
    if (actor.dead) return;
    registry_.mark_dead(actor);
    for (const auto id : actor.running) tell_failed(book_.lost_actor(id, checkpoint_of(id)));
    actor.running.clear();
    update_capacities();
    spdlog::warn("actor {} is out of service: {}", actor.id, why);
  }

  // The trial cannot go on: the tuner hears a failed result.
  void tell_failed(const std::optional<TrialBook::Failure>& failure) {
    if (failure) {
      tuning_.on_result(failure->trial, failure->budget, std::numeric_limits<double>::quiet_NaN(), nullptr, true);
    }
  }

  // The budget of the trial's newest checkpoint, if it has one: where it resumes.
  std::optional<double> checkpoint_of(TrialId id) const {
    if (!store_->has(id)) return std::nullopt;
    return store_->newest_budget(id);
  }

  // --- resuming (docs/faults.md) ----------------------------------------------------------

  // The tuner has replayed the journal; the books, the store and the clock follow it. Jobs
  // that had no result go back to the queue, each from its trial's newest checkpoint.
  void restore(const TunerJournal::Recovered& r) {
    std::vector<CheckpointStore::Recorded> recorded;
    for (const auto& c : r.checkpoints) recorded.push_back({c.trial, c.path, c.budget});
    // The journal commits in groups (kCommitInterval), and an actor's checkpoint file may
    // outlive the reports before it that the killed driver had not committed: resuming from
    // it would skip them. Such a checkpoint is left, unless it is the next report's own.
    // A job resumed from a checkpoint reports above it, and at its budget in any case.
    store_->recover(recorded, [&](TrialId id, double budget) {
      auto it = r.trials.find(id);
      if (it == r.trials.end()) return true;
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
        tuning_.on_result(job.trial, std::max(0.0, progress.reported), progress.last_metric, nullptr, false);
        continue;
      }
      book_.enqueue(job);
      ++requeued;
    }
    commit();
    spdlog::info("resuming {} from {}: {} report(s) and {} finished job(s) kept, {} job(s) go back to the queue",
                 config_.name, journal_path(options_.out_dir), r.rows.size(), r.results, requeued);
  }

  // Makes what the journal took durable, then writes the results rows it holds: results.jsonl
  // never has a line a resumed run would write again.
  void commit() {
    if (journal_) journal_->commit();
    if (results_) results_->flush();
  }

  // --- nodes: the driver's own actors (node 0) and `packtune node`s ------------------------

  // The driver is node 0: its actors run under the supervisor a `packtune node` uses, and
  // restart the same way.
  void start_local_actors(int threads) {
    registry_.add_local_node(host_name(), config_.actors, Clock::now());
    if (config_.actors == 0) return;
    SupervisorOptions supervision;
    supervision.log_dir = options_.out_dir + "/logs";
    local_ = std::make_unique<ActorSupervisor>(supervision);
    local_work_dir_ = fresh_work_dir("driver");
    for (int i = 0; i < config_.actors; ++i) {
      local_->start(actor_command(endpoint_, 0, i, threads, local_work_dir_, curve_ ? config_.keys : ""));
    }
  }

  void poll_local_actors() {
    if (!local_) return;
    for (const auto& e : local_->poll()) {
      if (e.kind != SupervisorEvent::Kind::Exited) continue;
      on_actor_exited(*registry_.node_by_id(0),
                      proto::ActorExited{e.local_index, e.pid, e.how, e.restarting, e.input_error});
    }
  }

  void on_node_message(NodeState& node, const proto::Message& message) {
    if (auto* exited = std::get_if<proto::ActorExited>(&message)) {
      on_actor_exited(node, *exited);
    } else if (!std::holds_alternative<proto::Heartbeat>(message)) {
      spdlog::warn("unexpected {} from node {}", proto::verb(message), node.id);
    }
  }

  // An actor's process ended: its trials go back to the queue now, not after the heartbeat
  // timeout.
  void on_actor_exited(NodeState& node, const proto::ActorExited& m) {
    registry_.slot_exited(node.id, m.local_index, !m.restarting);
    if (m.input_error) actor_input_error_ = true;
    const std::string where =
        node.id == 0 ? "see " + local_->log_path(m.local_index)
                     : fmt::format("node {} on {}; see its actor-{}.log", node.id, node.host, m.local_index);
    const std::string what = m.how + (m.restarting ? ", restarting" : "") + "; " + where;
    if (auto* actor = registry_.actor_in_slot(node.id, m.local_index, m.pid)) {
      retire(*actor, "its process " + what);
    } else if (!m.restarting) {
      actor_failures_.push_back(fmt::format("actor {} of node {} {}", m.local_index, node.id, what));
    }
  }

  static std::string describe_devices(const std::vector<proto::NodeDevice>& devices) {
    std::string out;
    for (const auto& d : devices) out += fmt::format("{}{} ({} MiB)", out.empty() ? "; " : ", ", d.name, d.memory_bytes >> 20);
    return out;
  }

  void check_heartbeats() {
    const auto now = Clock::now();
    // Timeouts are tens of seconds: ten looks a second are plenty, and under load the loop
    // comes here after every batch of messages.
    if (now < next_silence_check_) return;
    next_silence_check_ = now + std::chrono::milliseconds(100);
    for (auto* actor : registry_.silent_actors(now)) {
      retire(*actor, "no message for " + std::to_string(static_cast<int>(config_.actor_timeout_seconds)) + " s");
    }
    for (auto* node : registry_.silent_nodes(now)) {
      registry_.mark_node_dead(*node);
      spdlog::warn("node {} on {} is out of service: no message for {} s", node->id, node->host,
                   static_cast<int>(config_.actor_timeout_seconds));
    }
  }

  // The results folder deleted or replaced while the run goes on (a cleanup script, a wrong
  // `rm -r`): its reports, journal and checkpoints reach no one, and the run must not end in
  // "finished". Looked at a few times a second (a stat and three fstats), and at the end.
  void check_folder(bool now_or_never = false) {
    const auto now = Clock::now();
    if (now < next_folder_check_ && !now_or_never) return;
    next_folder_check_ = now + std::chrono::milliseconds(250);
    std::string lost;
    if (!folder_lock_->still_at(options_.out_dir)) {
      lost = "the results folder " + options_.out_dir + " was deleted or replaced";
    } else if (journal_->unlinked() || results_->unlinked()) {
      lost = (journal_->unlinked() ? journal_->path() : results_->path()) + " was deleted";
    }
    if (lost.empty()) return;
    folder_lost_ = true;
    throw Error(lost + " while the experiment ran; it stops (its results went with it)");
  }

  ActorState* actor_by_id(int id) { return registry_.actor_by_id(id); }

  // Says once per kind of device when its actors train one unit at a time although max_pack
  // allows more: otherwise a user who asked for packs of 8 sees one trial per actor and
  // cannot tell why.
  void explain_units(const std::string& device) {
    const auto kind = packing::device_class(device);
    if (config_.max_pack <= 1 || !explained_.insert(kind).second) return;
    if (packing::units_per_actor(setup_.mixed_packs, device) > 1) return;
    spdlog::info("{} actors train one unit (a model, or trials fused into one) at a time, as mixed_packs {} says{}; "
                 "\"mixed_packs\": \"always\" packs units side by side",
                 kind, to_string(config_.mixed_packs),
                 setup_.mixed_packs == packing::MixedPacks::Auto
                     ? " (units on a CPU take turns on its cores: a second one adds no throughput and delays the first)"
                     : "");
  }

  // The planner's view of the live actors (ActorRegistry::capacities); an actor keeps the
  // units it trains now.
  void update_capacities() {
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

  void on_measured(const ActorState& actor, const proto::Measured& m) {
    for (const auto& [id, trial] : book_.trials()) {
      if (trial.shape.key != m.key) continue;
      const auto before = planner_.memory_model().estimate(trial.shape, m.members).peak();
      planner_.memory_model().record_measurement(trial.shape, m.members, m.peak_bytes);
      spdlog::info("actor {} measured {} MiB for {} trial(s) of shape {} (the model said {} MiB)", actor.id,
                   m.peak_bytes >> 20, m.members, m.key, before >> 20);
      for (auto& a : plan_.actors) planner_.refresh(a);
      return;
    }
  }

  // The unit ran out of memory: its shape's figure grows and its trials go back to the
  // queue, to be placed with the new figure (in smaller units or on other actors). Their
  // last checkpoint, if any, is where they resume.
  void on_out_of_memory(ActorState& actor, const proto::OutOfMemory& m) {
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

  // The first jobs wait until every actor of the nodes that joined is ready (or a grace
  // period passed), so they are spread over all actors instead of filling whichever started
  // first.
  bool local_actors_settled() {
    if (!settled_) settled_ = registry_.live_actors() > 0 && registry_.settled(Clock::now());
    return settled_;
  }

  // Hands out work while actors have room. Returns true when the experiment is over.
  bool dispatch() {
    if (capacities_stale_) update_capacities();
    while (local_actors_settled()) {
      // Trials the actors could start now: member slots, as far as their unit slots allow.
      std::int64_t free = 0;
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
          if (running_jobs() == 0 && profiles_.held_jobs() == 0) return true;
          break;
        }
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
      packing::Unplaced why;
      const double steps = job_steps(config_, train_images_, job.budget, trial.shape.batch_size);
      auto target = planner_.place(plan_, {job.trial, trial.shape, steps}, &why);
      if (!target) {
        if (!why.waits) {
          const auto id = book_.take_next().trial;
          tell_failed(book_.give_up(id, why.reason));
          continue;
        }
        break;
      }
      start_next_job(*target, trial);
    }
    if (live_actors() > 0 || registry_.open_slots() > 0) {
      alone_since_.reset();
      return false;
    }
    // No actor trains and none of the driver's own will come back. An actor that exited on
    // bad input said why before it went: that is the user's line.
    if (actor_input_error_ && !actor_said_.empty()) throw InputError(actor_said_);
    // Nodes and actors started elsewhere may still join, as at the start: the driver waits
    // join_timeout_seconds for one (before, it waited for ever once its actors were given up).
    const auto now = Clock::now();
    const bool joined = registry_.any_actor_joined();
    const std::string join_with = fmt::format("packtune node --driver {}{}", endpoint_, curve_ ? " --keys DIR" : "");
    const std::string why = actor_failures_.empty() ? "every actor exited" : actor_failures_.back();
    if (!alone_since_) {
      alone_since_ = now;
      if (joined || config_.actors > 0) {
        spdlog::warn("no actor is left to train on ({}); waiting {:g} s (join_timeout_seconds) for one to join: "
                      "`{}`", why, config_.join_timeout_seconds, join_with);
      }
    }
    if (now - *alone_since_ < std::chrono::duration<double>(config_.join_timeout_seconds)) return false;
    if (!joined && config_.actors == 0) {
      throw Error(fmt::format("no actor joined within {:g} s (join_timeout_seconds); start `{}` on the machines "
                              "that should train", config_.join_timeout_seconds, join_with));
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
  bool replans_rungs() const {
    return config_.replan && (config_.tuner == "hyperband" || config_.tuner == "sha");
  }

  // The queue's next job starts on the actor the plan put it on.
  void start_next_job(int actor_id, TrialState& trial) {
    ActorState* actor = actor_by_id(actor_id);
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
    send(*actor, assign);
  }

  // A rung boundary (docs/planner.md): the tuner promotes trials, and every promotion it has
  // now is planned together (rung_replan.hpp) rather than placed as it comes. Called with the
  // first Resume on an empty queue; the jobs the plan has no room for wait at the queue's
  // front, and the tuner's next other job (a new trial) behind them.
  void start_rung(Job first) {
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
      demands.push_back({job.trial, trial.shape, job_steps(config_, train_images_, job.budget, trial.shape.batch_size)});
      jobs.emplace(job.trial, std::move(job));
    }
    const auto placement = replan_rung(planner_, plan_, demands);
    for (const auto& p : placement.placed) book_.enqueue(jobs.at(p.trial));
    for (auto& job : unknown) book_.enqueue(std::move(job));
    for (const auto id : placement.waiting) book_.enqueue(jobs.at(id));
    if (after) book_.enqueue(std::move(*after));
    if (!demands.empty()) {
      spdlog::info("rung boundary: {} promoted trial(s) re-planned into {} unit(s) on {} actor(s){}{}",
                   demands.size(), placement.units, placement.actors,
                   placement.waiting.empty() ? "" : fmt::format(", {} wait for room", placement.waiting.size()),
                   placement.replanned ? "" : " (placed one by one: a running unit would have moved)");
    }
    for (const auto& p : placement.placed) {
      const auto opened = book_.open_next();
      start_next_job(p.actor, *opened.trial);
    }
  }

  int running_jobs() const { return book_.running(); }

  int live_actors() const { return registry_.live_actors(); }

  double seconds_since_start() const {
    return std::chrono::duration<double>(Clock::now() - start_).count();
  }

  // What the status display shows (docs/status.md).
  StatusSnapshot status() const {
    StatusSnapshot s;
    s.experiment = config_.name;
    s.tuner = config_.tuner;
    s.metric = config_.metric;
    s.elapsed_seconds = seconds_since_start();
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
    for (const auto& a : plan_.actors) plans[a.actor.id] = &a;
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

  void shutdown_actors() {
    for (auto& [identity, actor] : registry_.actors()) {
      if (!actor.dead) send(actor, proto::Shutdown{});
    }
    for (const auto& [id, node] : registry_.nodes()) {
      if (id != 0 && !node.dead) send_to(node.identity, proto::Shutdown{}, "node " + std::to_string(id));
    }
    if (local_) local_->stop(10);
    remove_work_dir();
  }

  void summarize(bool finished) {
    const auto& best = results_->best();
    finish_checkpoints(finished);
    std::printf("%s %s in %.1f s: %lld jobs, %d failed trials; results in %s\n",
                finished ? "finished" : "stopped", config_.name.c_str(), seconds_since_start(),
                static_cast<long long>(book_.completed_jobs()),
                book_.failed_trials(), options_.out_dir.c_str());
    if (report_written_) std::printf("charts: %s/report.html\n", options_.out_dir.c_str());
    if (refused_reports_ > 0) {
      std::printf("%lld report(s) from actors retired after a partition were refused\n",
                  static_cast<long long>(refused_reports_));
    }
    if (best) {
      std::printf("best trial %lld: %s = %.4f at budget %g\n  config: %s\n",
                  static_cast<long long>(best->trial), config_.metric.c_str(), best->value, best->budget,
                  tuners::to_json(best->config).dump().c_str());
      if (const auto& test = results_->test(); !test.is_null() && test.contains("test_accuracy")) {
        std::printf("  test: test_accuracy = %.4f, test_loss = %.4f (its final model, at budget %g, on the test "
                    "split that selection never saw)\n",
                    test["test_accuracy"].get<double>(), test.value("test_loss", NAN), test["budget"].get<double>());
      }
    } else {
      std::printf("no trial reported %s\n", config_.metric.c_str());
    }
    std::fflush(stdout);
  }

  // --- throughput profiles (docs/planner.md) ----------------------------------------------

  // Whether the job waits in the gate for its shape's profile; sends the request it asks for.
  bool hold_for_profile(const Job& job, const TrialState& trial) {
    auto admission = profiles_.admit(job, trial.shape, trial.full, Clock::now());
    if (admission.ask) send(*actor_by_id(admission.ask->actor), admission.ask->profile);
    return admission.held;
  }

  // Jobs the gate gives back go to the front of the queue, in trial order.
  void release(const std::vector<Job>& jobs) { book_.put_back(jobs); }

  // --- checkpoints (docs/checkpoints.md) ---------------------------------------------------

  std::string checkpoint_dir() const {
    return std::filesystem::absolute(std::filesystem::path(options_.out_dir) / "checkpoints").string();
  }

  // The Assign of a job; a promotion or a restart names the trial's checkpoints, newest first.
  proto::Assign make_assign(const Job& job, TrialState& trial) {
    proto::Assign assign{job.trial, trial.full, job.budget, trial.seed};
    assign.lease = trial.lease;
    assign.resume_from = store_->newest_first(job.trial);
    trial.resume_budget = store_->newest_budget(job.trial);
    trial.start_checked = false;
    if (store_->has(job.trial)) {
      trial.reached = trial.resume_budget;
      spdlog::info("trial {} resumes from its checkpoint at budget {:g} and trains to budget {:g}", job.trial,
                   trial.resume_budget, job.budget);
    } else if (job.kind == Job::Kind::Resume) {
      spdlog::warn("trial {} has no checkpoint to resume from; it trains from scratch to budget {:g}", job.trial,
                   job.budget);
    }
    return assign;
  }

  // An actor that could not use a checkpoint (torn, corrupt, another architecture) fell back
  // to an older one or to scratch; the unusable ones are forgotten.
  void check_resumed(const proto::Report& report, TrialState& trial) {
    if (trial.start_checked) return;
    trial.start_checked = true;
    // Budgets recovered from file names (CheckpointStore::recover) carry six digits.
    if (std::abs(report.start_budget - trial.resume_budget) <= 1e-6 * std::max(1.0, trial.resume_budget)) return;
    spdlog::warn("trial {} could not resume from its checkpoint at budget {:g} and started from {}; see the "
                 "actor's log",
                 report.trial, trial.resume_budget,
                 report.start_budget > 0 ? fmt::format("budget {:g}", report.start_budget) : std::string("scratch"));
    store_->forget_after(report.trial, report.start_budget);
  }

  // --- the test split (docs/checkpoints.md, Final models) -----------------------------------

  // A trial that finished at the max budget wrote its final model, for the test at the end.
  // Only the best few finished trials, and the best report's trial, keep theirs: a sweep of
  // 100,000 trials must not fill the disk with final models nobody will test.
  void on_final_checkpoint(TrialId id, double budget) {
    if (config_.keep_checkpoints == KeepCheckpoints::All || budget < config_.max_budget * (1 - 1e-9)) return;
    auto ranks = [this](TrialId a, TrialId b) {
      return tuners::ranks_before(book_.at(a).last_metric, a, book_.at(b).last_metric, b, config_.mode);
    };
    best_finished_.insert(std::upper_bound(best_finished_.begin(), best_finished_.end(), id, ranks), id);
    while (best_finished_.size() > static_cast<std::size_t>(kKeepBestCheckpoints)) {
      const TrialId out = best_finished_.back();
      best_finished_.pop_back();
      const auto& best = results_->best();
      if (!best || best->trial != out) store_->drop(out);
    }
  }

  // Once the tuner is done, before the actors stop: the best trial's final model evaluated on
  // the test split by one actor, for best.json and the summary. Returns the run's exit code:
  // 0 when the test is done or cannot be done, 130 when a signal cut it short, 1 when no actor
  // answered; for those two the checkpoint stays and --resume runs the test again.
  int test_best() {
    const auto& best = results_->best();
    if (!config_.evaluate_test || !best) return 0;
    const auto paths = store_->newest_first(best->trial);
    if (paths.empty()) {
      spdlog::warn("no test accuracy: trial {} has no checkpoint (a job stopped early writes none)", best->trial);
      return 0;
    }
    const TrialState& trial = book_.at(best->trial);
    for (auto& [identity, actor] : registry_.actors()) {
      if (actor.dead || !actor.ready) continue;
      testing_ = Testing{best->trial, actor.id, std::nullopt};
      send(actor, proto::Test{best->trial, trial.full, trial.seed, paths});
      spdlog::info("actor {} evaluates trial {}'s final model on the test split", actor.id, best->trial);
      const auto deadline = Clock::now() + std::chrono::minutes(10);
      while (!testing_->answer && !actor.dead && !interrupted && Clock::now() < deadline) {
        try {
          if (auto routed = receive_routed(router_, 100)) {
            if (!store_->handle(router_, *routed)) handle(routed->identity, routed->message);
          }
        } catch (const Error& e) {
          spdlog::warn("ignoring a message: {}", e.what());
        }
        store_->tick(router_);
        poll_local_actors();
        check_heartbeats();
        check_folder();
      }
      // An answer that came in the same turn as the signal is kept.
      if (!testing_->answer && interrupted) break;
      if (!testing_->answer) continue;  // that actor died or hung: the next one tries
      const auto answer = std::move(*testing_->answer);
      testing_.reset();
      if (!answer.error.empty()) {
        spdlog::warn("no test accuracy for trial {}: {}", best->trial, answer.error);
        return 0;
      }
      nlohmann::json test = {{"trial", answer.trial}, {"budget", answer.budget}};
      for (const auto& [name, value] : answer.metrics) test[name] = value;
      results_->set_test(test);
      return 0;
    }
    testing_.reset();
    if (interrupted) {
      spdlog::warn("interrupted during the test of trial {}: every job is done, only the test remains; run it "
                   "with `packtune run --resume {}`", best->trial, options_.out_dir);
      return 130;
    }
    spdlog::error("no test accuracy for trial {}: no actor answered; every job is done, only the test remains; "
                  "run it with `packtune run --resume {}`", best->trial, options_.out_dir);
    return 1;
  }

  // At the end nothing can be promoted any more: the store keeps the best trials' newest
  // checkpoints (all of them with --keep-checkpoints all). A run that stopped early (a signal,
  // an error) keeps every one: `--resume` promotes from them. Reports disk use.
  void finish_checkpoints(bool finished) {
    const auto usage = finished ? store_->finish(kKeepBestCheckpoints,
                                                 [this](TrialId a, TrialId b) {
                                                   return tuners::ranks_before(book_.at(a).last_metric, a,
                                                                               book_.at(b).last_metric, b, config_.mode);
                                                 })
                                : store_->usage();
    std::printf("checkpoints: %lld file(s), %.1f MiB in %s (keep %s; %d deleted%s)\n",
                static_cast<long long>(usage.files), static_cast<double>(usage.bytes) / (1 << 20),
                store_->dir().c_str(), to_string(config_.keep_checkpoints).c_str(), usage.deleted,
                finished ? "" : "; all kept for --resume");
  }

  ExperimentConfig config_;
  DriverOptions options_;
  std::unique_ptr<tuners::Tuner> tuner_;
  TunerJournal tuning_;  // every call to the tuner goes through the journal
  std::unique_ptr<FolderLock> folder_lock_;  // before the report, whose thread asks it
  std::unique_ptr<Journal> journal_;
  std::unique_ptr<StatusDisplay> display_;
  std::unique_ptr<LiveReport> report_;  // DIR/report.html, rewritten during the run
  bool report_written_ = false;
  std::string ipc_file_;  // the socket file of an ipc endpoint, removed at the end
  std::vector<TrialId> best_finished_;  // trials keeping their final models, best first
  struct Testing {
    TrialId trial = -1;
    int actor = -1;
    std::optional<proto::Tested> answer;
  };
  std::optional<Testing> testing_;  // the test of the best trial, while it runs
  PlannerSetup setup_;  // the planner's options and actors' limits, as `packtune plan` has them
  packing::Planner planner_;
  packing::Plan plan_;  // the live actors and the units they train now
  ActorRegistry registry_;
  ProfileGate profiles_;  // jobs waiting for their shape's throughput profile
  TrialBook book_;        // the queue of jobs and the state of every trial
  zmq::context_t context_;
  zmq::socket_t router_;
  std::unique_ptr<CurveServer> curve_;  // declared after the context: it goes first
  std::string endpoint_;
  std::unique_ptr<ResultsWriter> results_;
  std::unique_ptr<CheckpointStore> store_;
  std::unique_ptr<ActorSupervisor> local_;  // node 0's actors; none with "actors": 0
  std::string local_work_dir_;               // their work folders, removed at the end
  std::vector<std::string> actor_failures_;
  bool actor_input_error_ = false;  // an actor process exited with code 2 (bad input)
  std::string actor_said_;          // the last ActorFailed message
  std::int64_t refused_reports_ = 0;
  std::set<std::string> asked_to_hello_;  // unknown peers told to join again (Rejoin), once each
  std::int64_t train_images_ = 0;  // an epoch's images, from the data file's header  // from retired actors, after a partition
  bool settled_ = false;
  std::set<std::string> explained_;  // device kinds explain_units spoke of
  bool capacities_stale_ = false;  // an actor got ready since the plan's actors were updated
  Clock::time_point start_;
  Clock::time_point next_silence_check_;
  Clock::time_point next_folder_check_;
  std::optional<Clock::time_point> alone_since_;  // since when no actor trains and none can come back
  bool folder_lost_ = false;  // check_folder found the results folder gone
  Clock::time_point last_commit_;  // the loop's last commit (kCommitInterval)
};

}  // namespace

std::string journal_path(const std::string& out_dir) {
  return (std::filesystem::path(out_dir) / "journal.jsonl").string();
}

int run_experiment(const ExperimentConfig& config, const DriverOptions& options) {
  SignalsCaught signals;
  remove_files_of_gone_drivers();
  Driver driver(config, options);
  return driver.run();
}

}  // namespace packtune
