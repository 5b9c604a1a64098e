#include "driver/driver.hpp"

#include <signal.h>
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
#include <regex>
#include <thread>

#include <spdlog/spdlog.h>

#include "actors/checkpoint_verify.hpp"
#include "driver/checkpoint_store.hpp"
#include "driver/driver_core.hpp"
#include "driver/driver_log.hpp"
#include "driver/driver_socket.hpp"
#include "driver/journal.hpp"
#include "driver/live_report.hpp"
#include "driver/local_actors.hpp"
#include "driver/node_outbox.hpp"
#include "driver/status_display.hpp"
#include "experiment/results_folder.hpp"
#include "experiment/results_writer.hpp"
#include "experiment/trial_shape.hpp"
#include "packtune/error.hpp"
#include "packtune/test_hold.hpp"
#include "protocol/peer_text.hpp"
#include "protocol/refusal_log.hpp"
#include "protocol/zmq_channel.hpp"
#include "util/folder_lock.hpp"
#include "util/work_folder.hpp"

namespace packtune {
namespace {

using Clock = std::chrono::steady_clock;
namespace proto = protocol;

// The folder lock and the temporary folder live in util/; their names stay the ones this file
// always used.
using util::FolderLock;
using util::temp_folder;

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
void remove_files_of_gone_drivers(bool quiet) {
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
    // Before the driver's log takes the console: --quiet keeps it to warnings here too.
    if (!removed && !quiet) spdlog::info("removed {}, left by driver {}, which is gone", it->path().string(), pid);
  }
}

// Messages handled between two dispatches at most: a flood of them (1,000 actors) must not
// hold back the jobs they free.
constexpr int kReceiveBatch = 64;

// The journal is made durable at most this often while the loop is busy (group commit): an
// fdatasync per loop turn was a fifth of the driver's CPU under 1,000 actors (850 a second in
// load_bench). A crash loses at most this much more of the journal's suffix, which --resume
// already tolerates; an idle loop still commits on its first turn.
constexpr auto kCommitInterval = std::chrono::milliseconds(10);

// The loop around the driver's core: the router socket (driver_socket.hpp), the checkpoint
// transfers, the driver's own actors (node 0, local_actors.hpp), the folder's lock, the display
// and the live report. What to do with a message is the core's business (driver_core.hpp).
class Driver {
 public:
  Driver(const ExperimentConfig& config, const DriverOptions& options)
      : config_(config),
        options_(options),
        core_(config, core_options(config, options), [this](const std::string& identity, const proto::Message& m) {
          deliver(identity, m);
        }, Clock::now()),
        local_(core_, std::max(config.join_timeout_seconds, config.actor_timeout_seconds)) {}

  int run() {
    // Before anything of the folder is read or written.
    if (options_.resume) folder_lock_ = std::make_unique<FolderLock>(options_.out_dir);
    bind();
    std::optional<TunerJournal::Recovered> recovered;
    std::unique_ptr<Journal> journal;
    std::unique_ptr<ResultsWriter> results;
    const double best_at = best_budget(config_.tuner, config_.max_budget);
    if (options_.resume) {
      auto reopened = Journal::reopen(in_folder(results_folder::kJournal));
      try {
        recovered = core_.tuning().replay(reopened.entries);
      } catch (const InputError& e) {
        throw InputError(in_folder(results_folder::kJournal) + ": " + e.what());
      } catch (const Error& e) {
        throw Error(in_folder(results_folder::kJournal) + ": " + e.what());
      }
      if (const auto ran = reopened.entries.front().value("config", nlohmann::json());
          !ran.is_null() && ResultsWriter::restore_config(options_.out_dir, ran)) {
        spdlog::warn("{} was damaged or missing; written again from the journal",
                     in_folder(results_folder::kConfig));
      }
      if (recovered->finished) {
        if (ResultsWriter::restore_rows(options_.out_dir, recovered->rows)) {
          spdlog::warn("{} was damaged or missing; written again from the journal",
                       in_folder(results_folder::kResults));
        }
        std::printf("%s in %s finished already (%lld jobs); nothing to resume\n", config_.name.c_str(),
                    options_.out_dir.c_str(), static_cast<long long>(recovered->finished_jobs));
        return 0;
      }
      journal = std::make_unique<Journal>(std::move(reopened.journal));
      results = std::make_unique<ResultsWriter>(options_.out_dir, recovered->rows, config_.metric, config_.mode,
                                                best_at);
    } else {
      // Nothing goes into the folder before its lock is held: a second driver started on the
      // same fresh --out would overwrite config.json and cut the first's results.jsonl.
      made_folder_ = ResultsWriter::create_folder(options_.out_dir);
      folder_lock_ = std::make_unique<FolderLock>(options_.out_dir);
      try {
        ResultsWriter::check_fresh(options_.out_dir);
      } catch (const InputError&) {
        ResultsWriter::remove_made_folders(options_.out_dir, made_folder_);  // left as it was found: absent
        throw;
      }
      results = std::make_unique<ResultsWriter>(options_.out_dir, config_.source, config_.metric, config_.mode,
                                                best_at);
      nlohmann::json header = {{"packtune_journal", 1}, {"name", config_.name}, {"config", config_.source}};
      if (!options_.data_files.is_null()) header["data_files"] = options_.data_files;
      journal = std::make_unique<Journal>(Journal::create(in_folder(results_folder::kJournal), header));
    }
    // Before any thread that logs starts: on a terminal the display takes the log's sinks.
    display_ = std::make_unique<StatusDisplay>(StatusDisplay::choose(options_.quiet));
    // After the display, which takes the console's sinks: a line only for the file must not
    // redraw the table.
    log_ = std::make_unique<DriverLog>(in_folder(results_folder::kDriverLog),
                                       options_.quiet     ? DriverLog::Console::Quiet
                                       : options_.verbose ? DriverLog::Console::Verbose
                                                          : DriverLog::Console::Normal);
    core_.show_job_lines(display_->mode() == StatusDisplay::Mode::Lines);
    if (options_.resume) record_resumed_data(*journal);
    // The lock outlives the report (declared before it), and still_at only reads its fd. The
    // report's thread writes through the lock's folder, not the path: a folder replaced between
    // its check and its write gets nothing.
    report_ = std::make_unique<LiveReport>(
        folder_lock_->held_path(), [lock = folder_lock_.get(), dir = options_.out_dir] { return lock->still_at(dir); });
    spdlog::info("charts: {}, rewritten every few seconds while the experiment runs",
                 in_folder(results_folder::kReport));
    const int threads = local_actor_threads(config_);
    explain_experiment(threads);
    // Uploads come from peers: HDF5 reads them in a child process, which a damaged file may crash.
    auto store = std::make_unique<CheckpointStore>(checkpoint_dir(), TransferOptions{},
                                                   [](const std::string& path) { actors::verify_checkpoint(path); });
    // The job lines the record thread formats reach the console and driver.log with its commit.
    core_.after_commit([this] { log_->flush(); });
    core_.attach(std::move(journal), std::move(results), std::move(store), Clock::now());
    if (recovered) core_.restore(*recovered);
    local_.start(config_.actors, socket_.endpoint(), threads, socket_.secure() ? config_.keys : "",
                 in_folder(results_folder::kLogs));

    int code = 0;
    try {
      code = loop();
      // Signals stay caught until best.json is written: scancel signals the driver and the batch
      // script, which passes SIGTERM on too, and that second signal must not cut the stop short.
      // A test that was cut short is not a finished run: the journal gets no `finished`, so
      // --resume finds the tuner done and runs only the test.
      if (code == 0) code = test_best();
      check_folder(true);
    } catch (const InputError&) {
      stop_after_failure();
      // The actors refused the config (a device this machine lacks) before any job started: as
      // for a config the command refuses, the folder is left as it was found, not half a run
      // that neither a new run nor --resume with another config could take. A run that started
      // a job keeps its folder: a job may have left a checkpoint before any report.
      if (!options_.resume && core_.book().started_jobs() == 0 && !folder_lost_) leave_folder_as_found();
      throw;
    } catch (...) {
      stop_after_failure();
      throw;
    }
    shutdown_actors();
    if (code == 0) core_.on_finished();
    core_.commit();
    core_.results()->write_best();
    const bool report_written = report_->finish();
    log_->write_through();
    display_->finish(core_.status(Clock::now()));
    core_.summarize(code == 0, report_written, Clock::now());
    if (code != 0) std::printf("continue it with: packtune run --resume %s\n", options_.out_dir.c_str());
    if (code == 0 && core_.every_trial_failed()) {
      std::fprintf(stderr, "packtune: error: every trial failed%s\n",
                   core_.last_failure().empty() ? "" : ("; the last: " + core_.last_failure()).c_str());
      return 1;
    }
    return code;
  }

 private:
  DriverCore::Options core_options(const ExperimentConfig& config, const DriverOptions& options) {
    DriverCore::Options o;
    o.out_dir = options.out_dir;
    o.train_images = training_images(config);
    o.input = input_dims(config);
    o.profile_cache_dir = ProfileCache::default_dir();
    o.fresh_profiles = options.fresh_profiles;
    // Only actors of node 0 exit through poll_local_actors, and they exist only with local_.
    o.local_log_path = [this](int i) { return local_.log_path(i); };
    return o;
  }

  // The loop ended by an error: the actors stop, and what the journal took so far is kept for
  // --resume.
  void stop_after_failure() {
    shutdown_actors();
    // A replaced folder is someone else's now: nothing more is written into it.
    if (folder_lost_) return;
    try {
      // A full disk may refuse even the journal's last entries.
      core_.commit();
      core_.results()->write_best();
    } catch (const Error& e) {
      spdlog::warn("{}", e.what());
    }
    report_->finish();
  }

  // Removes what this run wrote into its folder (check_fresh found none of it there before),
  // through the folder it locked, and the folders this run made for it (parents too) where
  // nothing else came into them.
  void leave_folder_as_found() {
    // A folder replaced meanwhile is someone else's.
    if (!folder_lock_->still_at(options_.out_dir)) return;
    const std::filesystem::path held = folder_lock_->held_path();
    std::error_code ec;
    for (const auto name : results_folder::kAll) std::filesystem::remove_all(held / name, ec);
    ResultsWriter::remove_made_folders(options_.out_dir, made_folder_);
  }

  // What the caller found of the data files on --resume (cli/run_command.cpp checked them
  // against the journal before anything was read in full or written): a change the user
  // allowed, or data the journal never recorded, goes into the journal with the fingerprints
  // of now, which the next resume checks against.
  void record_resumed_data(Journal& journal) {
    if (options_.data_unchecked) {
      spdlog::info("the data could not be checked: {} records no fingerprints of the data files (a run of an older "
                   "packtune); it records them now, for the next --resume", journal.path());
      journal.append({{"data_files", {{"fingerprints", options_.data_files}, {"unchecked", true}}}});
    } else if (!options_.data_changes.empty()) {
      std::string changes;
      for (const auto& c : options_.data_changes) changes += (changes.empty() ? "" : "; ") + c;
      spdlog::warn("--allow-changed-data: resuming on data that changed since the experiment ran: {}; the journal "
                   "records it", changes);
      journal.append({{"data_files",
                       {{"fingerprints", options_.data_files},
                        {"changed", options_.data_changes},
                        {"allowed", "--allow-changed-data"}}}});
    }
  }

  void bind() {
    socket_.bind(config_);
    core_.listening_on(socket_.endpoint(), socket_.secure());
  }

  // The experiment line, and what a user reproducing a run needs to know: whether packing
  // can show in the numbers.
  void explain_experiment(int threads) {
    const int cores = std::max(1u, std::thread::hardware_concurrency());
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
    spdlog::debug("{}{}", config_.fuse == packing::FuseMode::Always
                           ? "fuse always: trials of unlike widths share units, padded; which trials share one "
                             "depends on timing and can change a trial's last bits (docs/reproducibility.md)"
                       : config_.fuse == packing::FuseMode::Never
                           ? "fuse never: every trial trains as a plain LibTorch model"
                           : "fuse auto: units hold trials of one width and a trial alone is a unit of one, so "
                             "packing never changes a trial's numbers (docs/reproducibility.md)",
                 config_.fuse == packing::FuseMode::Auto && config_.device != "cpu" ? "; checked on CPUs, not yet on GPUs" : "");
    spdlog::info("driver listening on {}; machines join with: packtune node --driver {}{}", socket_.endpoint(),
                 socket_.endpoint(), socket_.secure() ? " --keys DIR" : "");
  }

  // Takes the messages of one wait: up to `batch`, waiting `wait_ms` for the first.
  void receive(long wait_ms, int batch) {
    // What the last turn sent goes before the loop waits.
    flush_outbox();
    for (int taken = 0; taken < batch; ++taken, wait_ms = 0) {
      std::optional<Routed> routed;
      try {
        routed = inbox_.receive(socket_.router(), wait_ms);
      } catch (const Error& e) {
        // Bytes that are not a message (a stranger on an open port) must not end the run, nor
        // fill its log: counted, a line an interval.
        malformed_.refuse(e.what(), Clock::now());
        continue;
      }
      if (!routed) break;
      proto::make_printable(routed->message);
      // Checkpoint transfers come from an actor's transfer socket, not its own; the core
      // admits them before the store sees them.
      if (!CheckpointStore::is_transfer(routed->message)) {
        core_.on_message(routed->identity, routed->message, Clock::now());
      } else if (core_.admit_transfer(routed->identity, routed->message, Clock::now())) {
        core_.store()->handle(socket_.router(), *routed);
      }
    }
    core_.store()->tick(socket_.router());
    for (const auto& peer : core_.store()->take_stalled()) core_.peer_stalled(peer);
    malformed_.flush(Clock::now());
    local_.poll();
  }

  int loop() {
    Clock::time_point last_commit;
    while (true) {
      if (interrupted) {
        spdlog::warn("interrupted: stopping the actors; results so far are in {}; continue with `packtune run "
                     "--resume {}`", options_.out_dir, options_.out_dir);
        return 130;
      }
      // Waits up to 50 ms for a message, then takes only those already queued: under load
      // messages never pause for 50 ms, and jobs go out after each batch, not after a pause.
      long wait_ms = 50;
      if (core_.uncommitted()) {
        // Entries wait for the next commit: wake for it even if no message comes.
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(last_commit + kCommitInterval - Clock::now());
        wait_ms = std::clamp<long>(static_cast<long>(left.count()), 1, wait_ms);
      }
      receive(wait_ms, kReceiveBatch);
      check_folder();
      const bool over = core_.step(Clock::now());
      const auto now = Clock::now();
      if (over || now - last_commit >= kCommitInterval) {
        // The last commit of the loop waits: a failure must stop the run before its test.
        if (over) {
          core_.commit();
        } else {
          core_.commit_soon();
        }
        log_->flush();
        last_commit = now;
        // Fault tests kill the driver here: a result is journaled and jobs run on. The commit
        // is waited for only then.
        if (core_.book().completed_jobs() > 0 && test_hold_armed("driver.result")) {
          core_.commit();
          test_hold("driver.result");
        }
      }
      if (over) return 0;
      core_.send_heartbeats(now);
      if (display_->due(now)) display_->show(core_.status(now), now);
      report_->tick(now);
    }
  }

  // Once the tuner is done, before the actors stop: the best trial's final model evaluated on
  // the test split by one actor, for best.json and the summary. Returns the run's exit code:
  // 0 when the test is done or cannot be done, 130 when a signal cut it short, 1 when no actor
  // answered; for those two the checkpoint stays and --resume runs the test again.
  int test_best() {
    if (!core_.test_wanted()) return 0;
    while (core_.ask_next_tester(Clock::now())) {
      const auto deadline = Clock::now() + std::chrono::minutes(10);
      while (!core_.test_answered() && !core_.tester_lost() && !interrupted && Clock::now() < deadline) {
        receive(100, 1);
        log_->flush();
        core_.check_heartbeats(Clock::now());
        check_folder();
      }
      // An answer that came in the same turn as the signal is kept.
      if (!core_.test_answered() && interrupted) break;
      if (!core_.test_answered()) continue;  // that actor died or hung: the next one tries
      return core_.record_test();
    }
    return core_.test_unanswered(interrupted);
  }

  void deliver(const std::string& identity, const proto::Message& message) {
    if (outbox_.hold(identity, message)) return;
    try {
      if (!send_message(socket_.router(), identity, message)) core_.peer_stalled(identity);
    } catch (const zmq::error_t& e) {
      // EHOSTUNREACH: the peer is gone; the heartbeat check will retire it.
      spdlog::debug("cannot send {}: {}", proto::verb(message), e.what());
    }
  }

  void flush_outbox() {
    for (const auto& peer : outbox_.flush(socket_.router())) core_.peer_stalled(peer);
  }

  void shutdown_actors() {
    core_.shutdown_actors();
    flush_outbox();
    local_.shutdown();
  }

  // The results folder deleted or replaced while the run goes on (a cleanup script, a wrong
  // `rm -r`): its reports, journal and checkpoints reach no one, and the run must not end in
  // "finished". Looked at a few times a second (a stat and three fstats), and at the end.
  void check_folder(bool now_or_never = false) {
    const auto now = Clock::now();
    if (now < next_folder_check_ && !now_or_never) return;
    next_folder_check_ = now + std::chrono::milliseconds(250);
    std::string lost;
    const auto* journal = core_.journal();
    const auto* results = core_.results();
    if (!folder_lock_->still_at(options_.out_dir)) {
      lost = "the results folder " + options_.out_dir + " was deleted or replaced";
    } else if (journal->unlinked() || results->unlinked()) {
      lost = (journal->unlinked() ? journal->path() : results->path()) + " was deleted";
    }
    if (lost.empty()) return;
    folder_lost_ = true;
    throw Error(lost + " while the experiment ran; it stops (its results went with it)");
  }

  // DIR/NAME of the results folder.
  std::string in_folder(std::string_view name) const { return results_folder::path(options_.out_dir, name); }

  std::string checkpoint_dir() const {
    return std::filesystem::absolute(in_folder(results_folder::kCheckpoints)).string();
  }

  ExperimentConfig config_;
  DriverOptions options_;
  std::unique_ptr<FolderLock> folder_lock_;  // before the report, whose thread asks it
  std::unique_ptr<StatusDisplay> display_;
  std::unique_ptr<DriverLog> log_;  // DIR/driver.log; goes before the display gives the sinks back
  std::unique_ptr<LiveReport> report_;  // DIR/report.html, rewritten during the run
  DriverSocket socket_;
  RouterInbox inbox_;    // what the router received: a node's bundle, message by message
  NodeOutbox outbox_;    // what goes to actors behind nodes, sent at the end of each turn
  DriverCore core_;  // declared after the socket it sends through
  LocalActors local_;  // node 0's actors, after the core they report to
  protocol::RefusalLog malformed_{"message(s) that are not packtune's (malformed frames)"};
  Clock::time_point next_folder_check_;
  std::string made_folder_;  // the outermost folder a new run made for its --out (create_folder)
  bool folder_lost_ = false;  // check_folder found the results folder gone
};

}  // namespace

int run_experiment(const ExperimentConfig& config, const DriverOptions& options) {
  SignalsCaught signals;
  remove_files_of_gone_drivers(options.quiet);
  Driver driver(config, options);
  return driver.run();
}

}  // namespace packtune
