// The control plane under load: the real driver (`packtune run`, spawned) and the real protocol
// over ZeroMQ, against simulated actors whose training is a timer. Every simulated actor is
// a DEALER socket of this one process, driven by one epoll loop, so 1,000 of them cost this
// process little more than the messages they exchange; a job sleeps (time_scale wall seconds
// per unit of budget, one unit being one simulated second) and reports the metric of a
// learning-curve objective, as `packtune simulate` does. Prints one JSON object.
//
//   load_bench [--actors N] [--trials N] [--time-scale X] [--quick] [--eta E]
//              [--min-budget m] [--max-budget M] [--report-every B] [--objective synthetic|table:FILE]
//              [--sampler random|tpe] [--seed S] [--heartbeat S] [--driver-quiet] [--packtune PATH]
//              [--keep DIR]
//
// The minimum the schedule allows (`minimum_seconds`) is the makespan of the same tuner, seed
// and objective on as many workers as there are actors in tuners::Simulator, which is the
// driver's schedule with a control plane that costs nothing, times the time scale.
// `overhead` = wall_seconds / minimum_seconds - 1, wall time running from the first Assign any
// actor receives to the Shutdown that ends the experiment (docs/benchmarks.md).
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <zmq.hpp>

#include "datasets/idx.hpp"
#include "packtune/error.hpp"
#include "protocol/protocol.hpp"
#include "protocol/zmq_channel.hpp"
#include "tuners/simulate/objective.hpp"
#include "tuners/search_space.hpp"
#include "tuners/simulate/simulator.hpp"
#include "tuners/tuner_registry.hpp"

extern char** environ;

namespace packtune::bench {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;
namespace fs = std::filesystem;
namespace proto = protocol;

#ifndef PACKTUNE_BINARY
#define PACKTUNE_BINARY "packtune"
#endif

struct Options {
  int actors = 1000;
  std::int64_t trials = 100000;
  // Wall seconds per simulated second. 0.25: a 100,000-trial sweep takes about a minute
  // and a job a quarter of a second, so the driver sees about 2,400 jobs a second, which is
  // what is measured, while timer and scheduling noise stays small against a job.
  double time_scale = 0.25;
  double min_budget = 1;  // simulated seconds: every trial's first job
  double max_budget = 9;
  int eta = 3;
  double report_every = 0;  // simulated seconds between intermediate reports; 0: final only
  std::string objective = "synthetic";
  // ASHA's sampler: tpe makes the driver model the results for every new trial's config.
  std::string sampler = "random";
  std::uint64_t seed = 1;
  double heartbeat_seconds = 1;
  bool driver_quiet = false;
  std::string packtune = PACKTUNE_BINARY;
  std::string keep;  // keep the run's folder (config, driver log, results) here
};

[[noreturn]] void usage(const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "load_bench: %s\n", why.c_str());
  std::fprintf(stderr,
               "usage: load_bench [--actors N] [--trials N] [--time-scale X] [--quick] [--eta E] [--min-budget m]\n"
               "                  [--max-budget M] [--report-every B] [--objective synthetic|table:FILE]\n"
               "                  [--sampler random|tpe] [--seed S] [--heartbeat S] [--driver-quiet] [--packtune PATH]\n"
               "                  [--keep DIR]\n"
               "Without options: 1,000 simulated actors, 100,000 ASHA trials (budgets 1, 3, 9 simulated seconds),\n"
               "time scale 0.25 wall seconds per simulated second. --quick: 50 actors, 1,000 trials, scale 0.02.\n");
  std::exit(2);
}

Options parse_options(int argc, char** argv) {
  Options o;
  auto value = [&](int& i) -> std::string {
    if (i + 1 >= argc) usage(std::string(argv[i]) + ": missing value");
    return argv[++i];
  };
  auto number = [&](int& i, double low) {
    const std::string flag = argv[i];
    const std::string text = value(i);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0' || !std::isfinite(v) || v < low) {
      usage(flag + ": expected a number >= " + std::to_string(low) + ", got " + text);
    }
    return v;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--actors") {
      o.actors = static_cast<int>(number(i, 1));
    } else if (a == "--trials") {
      o.trials = static_cast<std::int64_t>(number(i, 1));
    } else if (a == "--time-scale") {
      o.time_scale = number(i, 1e-6);
    } else if (a == "--quick") {
      o.actors = 50;
      o.trials = 1000;
      o.time_scale = 0.02;
    } else if (a == "--eta") {
      o.eta = static_cast<int>(number(i, 2));
    } else if (a == "--min-budget") {
      o.min_budget = number(i, 1e-9);
    } else if (a == "--max-budget") {
      o.max_budget = number(i, 1e-9);
    } else if (a == "--report-every") {
      o.report_every = number(i, 0);
    } else if (a == "--objective") {
      o.objective = value(i);
    } else if (a == "--sampler") {
      o.sampler = value(i);
      if (o.sampler != "random" && o.sampler != "tpe") usage("--sampler: expected random or tpe, got " + o.sampler);
    } else if (a == "--seed") {
      o.seed = static_cast<std::uint64_t>(number(i, 0));
    } else if (a == "--heartbeat") {
      o.heartbeat_seconds = number(i, 0.1);  // the driver's floor: idle actors wake every 100 ms
    } else if (a == "--driver-quiet") {
      o.driver_quiet = true;
    } else if (a == "--packtune") {
      o.packtune = value(i);
    } else if (a == "--keep") {
      o.keep = value(i);
    } else if (a == "--help" || a == "-h") {
      usage("");
    } else {
      usage("unknown option " + a);
    }
  }
  if (o.min_budget > o.max_budget) usage("--min-budget is above --max-budget");
  return o;
}

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// --- the experiment the driver runs ----------------------------------------------------------

json experiment_config(const Options& o, const std::string& endpoint, const std::string& data_dir) {
  json budget = {{"unit", "steps"}, {"min", o.min_budget}, {"max", o.max_budget}};
  if (o.report_every > 0) budget["report_every"] = o.report_every;
  return {
      {"name", "load_bench"},
      {"seed", o.seed},
      {"metric", "val_accuracy"},
      {"budget", budget},
      {"tuner", {{"name", "asha"}, {"trials", o.trials}, {"eta", o.eta}, {"sampler", o.sampler}}},
      // The actors are this process's sockets; the driver starts none.
      {"actors", 0},
      {"listen", endpoint},
      {"heartbeat_seconds", o.heartbeat_seconds},
      // One trial per actor, each a plain model: no throughput profiles, no fused units, so
      // a job is one Assign and its reports and the minimum is a plain makespan.
      {"max_pack", 1},
      {"fuse", "never"},
      // Answered as a real actor answers it: its own memory, not a share of the machine's.
      {"actor_memory", "16GiB"},
      // Simulated actors hold no model to test at the end.
      {"evaluate_test", false},
      {"data", {{"name", "fashion-mnist"}, {"dir", data_dir}, {"validation_size", 10}}},
      {"model", {{"family", "mlp"}, {"depth", 2}, {"batch_size", 128}}},
      {"space",
       {{"lr", {{"type", "loguniform"}, {"low", 1e-4}, {"high", 3e-2}}},
        {"dropout", {{"type", "uniform"}, {"low", 0.0}, {"high", 0.4}}},
        {"width", {{"type", "choice"}, {"values", {64, 128, 256}}}},
        {"optimizer", {{"type", "choice"}, {"values", {"adam", "sgd"}}}}}},
  };
}

tuners::TunerContext tuner_context(const Options& o, const json& config) {
  tuners::TunerContext c;
  c.space = tuners::SearchSpace::from_json(config.at("space"));
  c.metric = "val_accuracy";
  c.mode = tuners::Mode::Max;
  c.min_budget = o.min_budget;
  c.max_budget = o.max_budget;
  c.max_trials = o.trials;
  c.seed = o.seed;
  c.settings = {{"eta", o.eta}, {"sampler", o.sampler}};
  return c;
}

// The same tuner on as many workers as actors, in simulated time with nothing in between:
// the schedule's makespan and its work, in simulated seconds.
tuners::SimulationSummary simulate_schedule(const Options& o, const tuners::TunerContext& context) {
  auto tuner = tuners::TunerRegistry::instance().create("asha", context);
  auto objective = tuners::make_objective(o.objective, context);
  tuners::SimulationOptions sim;
  sim.workers = o.actors;
  sim.report_every = o.report_every;
  return tuners::Simulator(*tuner, *objective, context.mode, sim).run();
}

// --- the driver process -------------------------------------------------------------------------

struct CpuTimes {
  double user = 0, system = 0;
  double total() const { return user + system; }
};

// utime and stime of a live process, from /proc/PID/stat (clock ticks).
CpuTimes process_cpu(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  CpuTimes t;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  // Fields 3 ... 13 come before utime (14) and stime (15).
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) t.user = std::stod(field) / tick;
    if (i == 15) t.system = std::stod(field) / tick;
  }
  return t;
}

std::string tail_of(const std::string& path, std::size_t bytes) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.size() > bytes ? "..." + text.substr(text.size() - bytes) : text;
}

class DriverProcess {
 public:
  DriverProcess(const std::vector<std::string>& argv, const std::string& log) : log_(log) {
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const int rc = posix_spawnp(&pid_, args[0], &files, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&files);
    if (rc != 0) throw Error("cannot start " + argv[0] + ": " + std::strerror(rc) + "; pass --packtune PATH");
  }
  ~DriverProcess() {
    if (running()) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  pid_t pid() const { return pid_; }
  bool running() {
    if (exited_) return false;
    int status = 0;
    struct rusage usage {};
    if (::wait4(pid_, &status, WNOHANG, &usage) != pid_) return true;
    record_exit(status, usage);
    return false;
  }
  // Waits for the driver to end by itself; kills it after `timeout`.
  void wait(double timeout) {
    const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout));
    while (running()) {
      if (Clock::now() > until) {
        ::kill(pid_, SIGKILL);
        int status = 0;
        struct rusage usage {};
        ::wait4(pid_, &status, 0, &usage);
        record_exit(status, usage);
        throw Error("the driver did not exit within " + std::to_string(timeout) + " s of the experiment's end; see " +
                    log_);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  // The exit, once it exited: its status and resource use (getrusage of the child).
  int exit_code() const { return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_); }
  const struct rusage& usage() const { return usage_; }
  Clock::time_point exited_at() const { return exited_at_; }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(what + "; the driver's log " + log_ + " ends:\n" + tail_of(log_, 3000));
  }

 private:
  void record_exit(int status, const struct rusage& usage) {
    exited_ = true;
    status_ = status;
    usage_ = usage;
    exited_at_ = Clock::now();
  }

  std::string log_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int status_ = 0;
  struct rusage usage_ {};
  Clock::time_point exited_at_;
};

// --- the simulated actors ----------------------------------------------------------------------

struct Job {
  tuners::TrialId trial = -1;
  tuners::TrialConfig config;
  double start_budget = 0;  // where it resumed from: its checkpoint's budget, 0 from scratch
  double reached = 0;       // budget of its last report
  double budget = 0;
  bool checkpoint = false;
  std::uint64_t lease = 0;  // Assign.lease, repeated in every report
  Clock::time_point started;
};

struct SimActor {
  zmq::socket_t socket;
  int id = -1;  // the driver's, from Welcome
  bool welcomed = false;
  std::map<tuners::TrialId, Job> jobs;
  Clock::time_point last_sent;
  Clock::time_point idle_since;  // its last job ended, nothing runs: the driver owes it work
  bool idle = true;
  bool assigned = false;  // got a job yet
};

// A job's next report, in wall time.
struct Wakeup {
  Clock::time_point due;
  int actor;
  tuners::TrialId trial;
  bool operator>(const Wakeup& o) const { return due > o.due; }
};

struct Counters {
  std::int64_t sent = 0;      // actor -> driver
  std::int64_t received = 0;  // driver -> actor
  std::int64_t assigns = 0;
  std::int64_t final_reports = 0;
  std::int64_t heartbeats_sent = 0;
  std::int64_t heartbeats_received = 0;
  std::int64_t total() const { return sent + received; }
};

class Fleet {
 public:
  Fleet(const Options& options, const tuners::TunerContext& context, DriverProcess& driver)
      : options_(options), driver_(driver), objective_(tuners::make_objective(options.objective, context)) {
    context_.set(zmq::ctxopt::io_threads, 1);
    // Each DEALER holds a mailbox descriptor and its connection's.
    context_.set(zmq::ctxopt::max_sockets, options.actors + 64);
    epoll_ = ::epoll_create1(EPOLL_CLOEXEC);
    timer_ = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (epoll_ < 0 || timer_ < 0) throw Error(std::string("epoll/timerfd: ") + std::strerror(errno));
    add_fd(timer_, kTimer);
  }
  ~Fleet() {
    actors_.clear();
    ::close(timer_);
    ::close(epoll_);
  }

  // Connects every actor and says Hello; returns once each got its Welcome.
  void join(const std::string& endpoint) {
    actors_.reserve(static_cast<std::size_t>(options_.actors));
    for (int i = 0; i < options_.actors; ++i) {
      SimActor a{zmq::socket_t(context_, zmq::socket_type::dealer)};
      a.socket.set(zmq::sockopt::linger, 0);
      a.socket.connect(endpoint);
      actors_.push_back(std::move(a));
      add_fd(actors_.back().socket.get(zmq::sockopt::fd), static_cast<std::uint32_t>(i));
    }
    for (int i = 0; i < options_.actors; ++i) {
      proto::Hello hello;
      hello.host = "load-bench";
      hello.pid = ::getpid();
      hello.threads = 1;
      send(i, hello);
    }
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    while (welcomed_ < options_.actors) {
      if (Clock::now() > deadline) driver_.fail(std::to_string(welcomed_) + " of the actors were welcomed in 120 s");
      poll_once(std::chrono::milliseconds(100));
    }
  }

  // Every actor says Ready at once, then trains what it is given until the driver says
  // Shutdown. Returns when the first Shutdown arrives.
  void run() {
    proto::Ready ready;
    ready.device = "cpu";
    ready.capacity_bytes = std::int64_t{16} << 30;
    ready.capacity_shared = false;
    ready_at_ = Clock::now();
    for (int i = 0; i < options_.actors; ++i) send(i, ready);
    next_sweep_ = Clock::now();
    while (!shutdown_) {
      fire_due();
      if (Clock::now() >= next_sweep_) sweep();
      drain_rechecks();
      if (shutdown_) break;
      arm_timer();
      poll_once(rechecks_.empty() ? std::chrono::milliseconds(-1) : std::chrono::milliseconds(0));
    }
  }

  const Counters& counters() const { return counters_; }
  Clock::time_point ready_at() const { return ready_at_; }
  std::optional<Clock::time_point> first_assign() const { return first_assign_; }
  // When the last actor got its first job; nullopt if some never did.
  std::optional<Clock::time_point> all_assigned() const { return all_assigned_; }
  Clock::time_point shutdown_at() const { return shutdown_at_; }
  // Driver CPU and messages when the first Assign came (the window's start).
  const CpuTimes& cpu_at_first_assign() const { return cpu_at_first_assign_; }
  const Counters& counters_at_first_assign() const { return counters_at_first_assign_; }
  const std::vector<double>& idle_gaps() const { return idle_gaps_; }
  double mean_lateness() const { return fired_ ? lateness_ / static_cast<double>(fired_) : 0; }
  double max_lateness() const { return max_lateness_; }
  double busy_seconds() const { return busy_seconds_; }

 private:
  static constexpr std::uint32_t kTimer = 0xffffffffu;

  void add_fd(int fd, std::uint32_t tag) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = tag;
    if (::epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev) != 0) throw Error(std::string("epoll_ctl: ") + std::strerror(errno));
  }

  void send(int i, const proto::Message& message) {
    auto& a = actors_[static_cast<std::size_t>(i)];
    send_message(a.socket, message);
    a.last_sent = Clock::now();
    ++counters_.sent;
    // A send may take the socket's pending read signal: its ZMQ_EVENTS must be read again.
    rechecks_.push_back(i);
  }

  void poll_once(std::chrono::milliseconds timeout) {
    epoll_event events[256];
    const int n = ::epoll_wait(epoll_, events, 256, static_cast<int>(timeout.count()));
    for (int e = 0; e < n; ++e) {
      if (events[e].data.u32 == kTimer) {
        std::uint64_t expirations = 0;
        [[maybe_unused]] auto r = ::read(timer_, &expirations, sizeof expirations);
      } else {
        drain(static_cast<int>(events[e].data.u32));
      }
    }
    drain_rechecks();
  }

  void drain_rechecks() {
    while (!rechecks_.empty()) {
      const int i = rechecks_.back();
      rechecks_.pop_back();
      drain(i);
    }
  }

  // Reads every message the socket holds.
  void drain(int i) {
    auto& socket = actors_[static_cast<std::size_t>(i)].socket;
    while (socket.get(zmq::sockopt::events) & ZMQ_POLLIN) {
      zmq::message_t frame;
      if (!socket.recv(frame, zmq::recv_flags::dontwait)) break;
      while (frame.more()) {
        zmq::message_t extra;  // a payload frame belongs to checkpoint transfers only
        if (!socket.recv(extra, zmq::recv_flags::dontwait)) break;
        if (!extra.more()) break;
      }
      ++counters_.received;
      handle(i, proto::decode(frame.data(), frame.size()));
    }
  }

  void handle(int i, const proto::Message& message) {
    auto& a = actors_[static_cast<std::size_t>(i)];
    if (auto* welcome = std::get_if<proto::Welcome>(&message)) {
      a.id = welcome->actor_id;
      a.welcomed = true;
      checkpoint_dir_ = welcome->spec.checkpoint_dir;
      ++welcomed_;
    } else if (auto* assign = std::get_if<proto::Assign>(&message)) {
      on_assign(i, *assign);
    } else if (auto* stop = std::get_if<proto::Stop>(&message)) {
      a.jobs.erase(stop->trial);
      if (a.jobs.empty()) mark_idle(a);
    } else if (std::holds_alternative<proto::Heartbeat>(message)) {
      ++counters_.heartbeats_received;
    } else if (std::holds_alternative<proto::Shutdown>(message)) {
      if (!shutdown_) shutdown_at_ = Clock::now();
      shutdown_ = true;
    } else if (auto* profile = std::get_if<proto::Profile>(&message)) {
      // Not asked with fuse "never"; answered so that a driver that asks does not wait.
      send(i, proto::Profiled{profile->key, "cpu", {}, {}, "a simulated actor measures nothing"});
    } else if (auto* reject = std::get_if<proto::Reject>(&message)) {
      driver_.fail("the driver refused a simulated actor: " + reject->reason);
    } else {
      driver_.fail(std::string("a simulated actor got an unexpected ") + proto::verb(message));
    }
  }

  void on_assign(int i, const proto::Assign& assign) {
    const auto now = Clock::now();
    if (!first_assign_) {
      first_assign_ = now;
      cpu_at_first_assign_ = process_cpu(driver_.pid());
      counters_at_first_assign_ = counters_;
    }
    ++counters_.assigns;
    auto& a = actors_[static_cast<std::size_t>(i)];
    if (!a.assigned && ++assigned_actors_ == options_.actors) all_assigned_ = now;
    a.assigned = true;
    if (a.idle && a.idle_since.time_since_epoch().count() != 0) idle_gaps_.push_back(seconds(now - a.idle_since));
    a.idle = false;
    Job job;
    job.trial = assign.trial;
    job.config = assign.config;
    job.budget = assign.budget;
    job.checkpoint = assign.checkpoint;
    job.lease = assign.lease;
    job.started = now;
    // A promotion resumes from the trial's checkpoint, which this process "wrote" (no file
    // exists: the driver only records and deletes names).
    if (!assign.resume_from.empty()) {
      auto held = checkpoints_.find(assign.trial);
      if (held != checkpoints_.end() && held->second.first == assign.resume_from.front()) {
        job.start_budget = held->second.second;
      }
    }
    job.reached = job.start_budget;
    a.jobs[assign.trial] = job;
    schedule(i, a.jobs[assign.trial]);
  }

  // The job's next report: the next multiple of report_every, or its budget.
  double next_point(const Job& job) const {
    if (options_.report_every <= 0) return job.budget;
    const double k = std::floor(job.reached / options_.report_every + 1e-9) + 1;
    return std::min(job.budget, k * options_.report_every);
  }

  Clock::time_point due(const Job& job, double point) const {
    return job.started +
           std::chrono::duration_cast<Clock::duration>(
               std::chrono::duration<double>((point - job.start_budget) * options_.time_scale));
  }

  void schedule(int i, const Job& job) { wakeups_.push({due(job, next_point(job)), i, job.trial}); }

  void fire_due() {
    while (!wakeups_.empty()) {
      const auto now = Clock::now();
      const Wakeup w = wakeups_.top();
      if (w.due > now) return;
      wakeups_.pop();
      auto& a = actors_[static_cast<std::size_t>(w.actor)];
      auto it = a.jobs.find(w.trial);
      if (it == a.jobs.end()) continue;  // stopped
      const double late = seconds(now - w.due);
      lateness_ += late;
      max_lateness_ = std::max(max_lateness_, late);
      ++fired_;
      report(w.actor, it->second);
    }
  }

  void report(int i, Job& job) {
    auto& a = actors_[static_cast<std::size_t>(i)];
    const double point = next_point(job);
    const double metric = objective_->evaluate(job.trial, job.config, point);
    proto::Report r;
    r.trial = job.trial;
    r.budget = point;
    r.metrics = {{"val_accuracy", metric}, {"val_loss", 1 - metric}, {"train_loss", 1 - metric}};
    r.final = point >= job.budget;
    r.train_seconds = (point - job.start_budget) * options_.time_scale;
    r.start_budget = job.start_budget;
    r.unit_size = 1;
    r.lease = job.lease;
    job.reached = point;
    if (!r.final) {
      send(i, r);
      schedule(i, job);
      return;
    }
    if (job.checkpoint && !checkpoint_dir_.empty()) {
      char name[96];
      std::snprintf(name, sizeof name, "/trial-%" PRId64 "-budget-%g.h5", job.trial, job.budget);
      r.checkpoint = checkpoint_dir_ + name;
      checkpoints_[job.trial] = {r.checkpoint, job.budget};
    }
    busy_seconds_ += seconds(Clock::now() - job.started);
    a.jobs.erase(job.trial);
    ++counters_.final_reports;
    send(i, r);
    if (a.jobs.empty()) mark_idle(a);
  }

  void mark_idle(SimActor& a) {
    a.idle = true;
    a.idle_since = Clock::now();
  }

  // Heartbeats as a real actor sends them: after heartbeat_seconds without sending anything.
  void sweep() {
    const auto now = Clock::now();
    const auto period = std::chrono::duration<double>(options_.heartbeat_seconds);
    for (int i = 0; i < options_.actors; ++i) {
      if (now - actors_[static_cast<std::size_t>(i)].last_sent >= period) {
        send(i, proto::Heartbeat{});
        ++counters_.heartbeats_sent;
      }
    }
    if (!driver_.running()) driver_.fail("the driver exited during the run");
    next_sweep_ = now + std::chrono::milliseconds(100);
  }

  // The timer wakes the loop at the next report or sweep, to the nanosecond.
  void arm_timer() {
    auto next = next_sweep_;
    if (!wakeups_.empty()) next = std::min(next, wakeups_.top().due);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(next.time_since_epoch()).count();
    itimerspec spec{};
    spec.it_value.tv_sec = std::max<std::int64_t>(0, ns / 1000000000);
    spec.it_value.tv_nsec = ns % 1000000000;
    if (spec.it_value.tv_sec == 0 && spec.it_value.tv_nsec == 0) spec.it_value.tv_nsec = 1;
    ::timerfd_settime(timer_, TFD_TIMER_ABSTIME, &spec, nullptr);
  }

  const Options& options_;
  DriverProcess& driver_;
  std::unique_ptr<tuners::Objective> objective_;
  zmq::context_t context_;
  int epoll_ = -1;
  int timer_ = -1;
  std::vector<SimActor> actors_;
  std::vector<int> rechecks_;
  std::priority_queue<Wakeup, std::vector<Wakeup>, std::greater<Wakeup>> wakeups_;
  std::map<tuners::TrialId, std::pair<std::string, double>> checkpoints_;  // newest per trial
  std::string checkpoint_dir_;
  int welcomed_ = 0;
  bool shutdown_ = false;
  Counters counters_;
  Counters counters_at_first_assign_;
  CpuTimes cpu_at_first_assign_;
  Clock::time_point ready_at_;
  std::optional<Clock::time_point> first_assign_;
  std::optional<Clock::time_point> all_assigned_;
  int assigned_actors_ = 0;
  Clock::time_point shutdown_at_;
  Clock::time_point next_sweep_;
  std::vector<double> idle_gaps_;
  double lateness_ = 0;
  double max_lateness_ = 0;
  std::int64_t fired_ = 0;
  double busy_seconds_ = 0;
};

// --- the run -----------------------------------------------------------------------------------

// Each simulated actor holds two descriptors here and one in the driver.
void raise_open_files(int actors) {
  struct rlimit limit {};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  const rlim_t needed = static_cast<rlim_t>(actors) * 2 + 256;
  if (limit.rlim_cur < needed) {
    limit.rlim_cur = std::min(limit.rlim_max, std::max(needed, limit.rlim_cur));
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
  if (limit.rlim_cur < needed) {
    throw Error("open files: " + std::to_string(actors) + " actors need " + std::to_string(needed) +
                ", the hard limit is " + std::to_string(limit.rlim_max) + " (ulimit -Hn)");
  }
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

double load_average() {
  double load = 0;
  std::ifstream("/proc/loadavg") >> load;
  return load;
}

std::int64_t count_lines(const std::string& path) {
  std::ifstream in(path);
  std::int64_t n = 0;
  std::string line;
  while (std::getline(in, line)) ++n;
  return n;
}

double round_to(double v, int digits) {
  const double f = std::pow(10.0, digits);
  return std::round(v * f) / f;
}

int run(const Options& o) {
  raise_open_files(o.actors);
  char pattern[] = "/tmp/packtune-load-XXXXXX";
  if (!::mkdtemp(pattern)) throw Error(std::string("mkdtemp: ") + std::strerror(errno));
  const std::string dir = pattern;
  struct Cleanup {
    std::string dir;
    bool keep;
    ~Cleanup() {
      std::error_code ec;
      if (!keep) fs::remove_all(dir, ec);
    }
  } cleanup{dir, !o.keep.empty()};

  // The driver reads and checks the data files before it starts; simulated actors never read
  // them, so 20 blank images do.
  const std::string data_dir = dir + "/data";
  fs::create_directories(data_dir);
  datasets::IdxArray images{{20, 28, 28}, std::vector<std::uint8_t>(20 * 28 * 28, 0)};
  datasets::IdxArray labels{{20}, {}};
  for (std::uint8_t i = 0; i < 20; ++i) labels.data.push_back(i % 10);
  datasets::write_idx(data_dir + "/train-images-idx3-ubyte", images);
  datasets::write_idx(data_dir + "/train-labels-idx1-ubyte", labels);
  const std::string endpoint = "ipc://" + dir + "/driver.ipc";
  const json config = experiment_config(o, endpoint, data_dir);
  std::ofstream(dir + "/config.json") << config.dump(2) << "\n";

  const auto context = tuner_context(o, config);
  const auto simulated_at = Clock::now();
  const auto schedule = simulate_schedule(o, context);
  const double simulate_seconds = seconds(Clock::now() - simulated_at);

  std::vector<std::string> argv = {o.packtune, "run", dir + "/config.json", "--out", dir + "/out"};
  if (o.driver_quiet) argv.push_back("--quiet");
  const double load_before = load_average();
  const auto started = Clock::now();
  DriverProcess driver(argv, dir + "/driver.log");
  // Connecting before the driver binds works too, but each early socket then waits out
  // ZeroMQ's reconnect interval.
  while (!fs::exists(dir + "/driver.ipc")) {
    if (!driver.running()) driver.fail("the driver exited before it listened");
    if (Clock::now() - started > std::chrono::seconds(60)) driver.fail("the driver did not listen within 60 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Fleet fleet(o, context, driver);
  struct rusage self_before {};
  ::getrusage(RUSAGE_SELF, &self_before);
  fleet.join(endpoint);
  const auto joined = Clock::now();
  fleet.run();
  const CpuTimes cpu_at_end = process_cpu(driver.pid());
  const Counters at_end = fleet.counters();
  struct rusage self_after {};
  ::getrusage(RUSAGE_SELF, &self_after);
  driver.wait(120);
  if (driver.exit_code() != 0) driver.fail("the driver exited with code " + std::to_string(driver.exit_code()));
  if (!fleet.first_assign()) driver.fail("no job was assigned");

  const double wall = seconds(fleet.shutdown_at() - *fleet.first_assign());
  const double minimum = schedule.time * o.time_scale;
  const double work_bound = schedule.total_budget * o.time_scale / o.actors;
  const double window_cpu = cpu_at_end.total() - fleet.cpu_at_first_assign().total();
  const std::int64_t messages = at_end.total() - fleet.counters_at_first_assign().total();
  const auto& usage = driver.usage();
  const double driver_cpu_total = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                                  static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  auto cpu_of = [](const struct rusage& r) {
    return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
           static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
  };
  const std::int64_t rows = count_lines(dir + "/out/results.jsonl");

  json out;
  out["actors"] = o.actors;
  out["trials"] = o.trials;
  out["time_scale"] = o.time_scale;
  out["sampler"] = o.sampler;
  out["budgets"] = {{"min", o.min_budget}, {"max", o.max_budget}, {"eta", o.eta}, {"report_every", o.report_every}};
  out["jobs"] = at_end.assigns;
  out["simulated_jobs"] = schedule.jobs;
  out["reports"] = rows;
  out["messages"] = messages;
  out["wall_seconds"] = round_to(wall, 3);
  out["minimum_seconds"] = round_to(minimum, 3);
  out["work_bound_seconds"] = round_to(work_bound, 3);
  out["overhead"] = round_to(wall / minimum - 1, 5);
  out["messages_per_second"] = round_to(static_cast<double>(messages) / wall, 1);
  out["driver_cpu_seconds"] = round_to(window_cpu, 2);
  out["driver_cpu_us_per_message"] = round_to(window_cpu * 1e6 / static_cast<double>(std::max<std::int64_t>(1, messages)), 2);
  out["driver_cpu_share"] = round_to(window_cpu / wall, 4);
  out["driver_peak_rss_mb"] = round_to(static_cast<double>(usage.ru_maxrss) / 1024.0, 1);
  out["driver_total_cpu_seconds"] = round_to(driver_cpu_total, 2);
  out["join_seconds"] = round_to(seconds(joined - started), 3);
  out["ready_to_first_assign_seconds"] = round_to(seconds(*fleet.first_assign() - fleet.ready_at()), 3);
  if (fleet.all_assigned()) out["first_to_last_start_seconds"] = round_to(seconds(*fleet.all_assigned() - *fleet.first_assign()), 3);
  out["shutdown_to_exit_seconds"] = round_to(seconds(driver.exited_at() - fleet.shutdown_at()), 3);
  const auto& gaps = fleet.idle_gaps();
  double gap_sum = 0;
  for (double g : gaps) gap_sum += g;
  out["idle_gap_ms"] = {{"mean", round_to(gaps.empty() ? 0 : gap_sum / static_cast<double>(gaps.size()) * 1e3, 3)},
                        {"p50", round_to(percentile(gaps, 0.5) * 1e3, 3)},
                        {"p99", round_to(percentile(gaps, 0.99) * 1e3, 3)},
                        {"max", round_to(percentile(gaps, 1.0) * 1e3, 3)}};
  out["actor_timer_lateness_ms"] = {{"mean", round_to(fleet.mean_lateness() * 1e3, 3)},
                                    {"max", round_to(fleet.max_lateness() * 1e3, 3)}};
  out["bench_cpu_seconds"] = round_to(cpu_of(self_after) - cpu_of(self_before), 2);
  out["simulate_seconds"] = round_to(simulate_seconds, 2);
  out["cores"] = std::thread::hardware_concurrency();
  out["load_average"] = {{"before", load_before}, {"after", load_average()}};
  out["driver_quiet"] = o.driver_quiet;
  if (!o.keep.empty()) {
    std::error_code ec;
    fs::create_directories(fs::path(o.keep).parent_path(), ec);
    fs::rename(dir, o.keep, ec);
    if (ec) fs::copy(dir, o.keep, fs::copy_options::recursive, ec);
    out["kept"] = o.keep;
  }
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace
}  // namespace packtune::bench

int main(int argc, char** argv) {
  const auto options = packtune::bench::parse_options(argc, argv);
  try {
    return packtune::bench::run(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "load_bench: %s\n", e.what());
    return 1;
  }
}
