#pragma once
// The simulated actors: one DEALER socket each in this process, or with --nodes one per
// simulated node that carries its actors (link.hpp), all driven by one epoll loop, so that
// 1,000 of them cost little more than the messages they exchange. A job is a timer that
// reports the objective's metric, as `packtune simulate` would.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "bench/load_bench/clock.hpp"
#include "bench/load_bench/driver_process.hpp"
#include "bench/load_bench/link.hpp"
#include "bench/load_bench/options.hpp"
#include "protocol/protocol.hpp"
#include "protocol/redial.hpp"
#include "tuners/simulate/objective.hpp"
#include "tuners/tuner.hpp"

namespace packtune::bench {

namespace proto = protocol;

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
  int link = -1;
  int slot = -1;          // behind a node: its slot there; else -1
  std::string envelope;   // behind a node: what the relay would name it
  int id = -1;  // the driver's, from Welcome
  bool welcomed = false;
  bool ever_welcomed = false;
  Clock::time_point next_hello;  // unwelcomed: when it says Hello again
  std::chrono::milliseconds hello_interval{2000};
  std::map<tuners::TrialId, Job> jobs;
  Clock::time_point last_sent;
  Clock::time_point idle_since;  // its last job ended, nothing runs: the driver owes it work
  bool idle = true;
  bool assigned = false;  // got a job yet
  bool waited = false;    // waited for a job after one of its own ended
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
  Fleet(const Options& options, const tuners::TunerContext& context, DriverProcess& driver);
  ~Fleet();

  // Connects every actor and says Hello; returns once each got its Welcome, or, with
  // --driver-open-files, once the driver's connection cap's worth did (it refuses the rest).
  void join(const std::string& endpoint);

  // Every actor that joined says Ready at once, then trains what it is given until the driver
  // says Shutdown; one that joins later says Ready then. Returns when the first Shutdown arrives.
  void run();

  const Counters& counters() const { return counters_; }
  int welcomed() const { return welcomed_; }
  int ever_welcomed() const { return ever_welcomed_; }  // actors welcomed at least once
  int trained() const { return assigned_actors_; }      // actors given a job at least once
  std::int64_t refusals() const;                         // connections the driver refused
  int connections() const { return static_cast<int>(links_.size()); }
  int rejoins() const { return rejoins_; }  // Rejoins heard: connections the driver lost
  Clock::time_point ready_at() const { return ready_at_; }
  std::optional<Clock::time_point> first_assign() const { return first_assign_; }
  // When the last actor got its first job; nullopt if some never did.
  std::optional<Clock::time_point> all_assigned() const { return all_assigned_; }
  Clock::time_point shutdown_at() const { return shutdown_at_; }
  // Driver CPU and messages when the first Assign came (the window's start).
  const CpuTimes& cpu_at_first_assign() const { return cpu_at_first_assign_; }
  const Counters& counters_at_first_assign() const { return counters_at_first_assign_; }
  const std::vector<double>& idle_gaps() const { return idle_gaps_; }
  // The part of idle_gaps that each actor waited after its first job.
  double first_job_idle_seconds() const { return first_job_idle_seconds_; }
  double mean_lateness() const { return fired_ ? lateness_ / static_cast<double>(fired_) : 0; }
  double max_lateness() const { return max_lateness_; }
  double busy_seconds() const { return busy_seconds_; }

 private:
  static constexpr std::uint32_t kTimer = 0xffffffffu;

  void add_fd(int fd, std::uint32_t tag);
  void connect(const std::string& endpoint);
  void send(int i, const proto::Message& message);
  void poll_once(std::chrono::milliseconds timeout);
  void recheck_after_events(int link);
  void drain_rechecks();
  void drain(int link);
  void deliver(int link, const Delivery& delivery);
  void handle(int i, const proto::Message& message);
  void handle_node(int link, const proto::Message& message);
  void say_node_hello(int link);
  void on_assign(int i, const proto::Assign& assign);
  double next_point(const Job& job) const;
  Clock::time_point due(const Job& job, double point) const;
  void schedule(int i, const Job& job) { wakeups_.push({due(job, next_point(job)), i, job.trial}); }
  void fire_due();
  void report(int i, Job& job);
  void mark_idle(SimActor& a);
  void say_hello(int i);
  proto::Ready ready() const;
  void keep_alive(Clock::time_point now);
  void sweep();
  void arm_timer();

  const Options& options_;
  DriverProcess& driver_;
  std::unique_ptr<tuners::Objective> objective_;
  zmq::context_t context_;
  int epoll_ = -1;
  int timer_ = -1;
  std::vector<SimActor> actors_;
  std::vector<Link> links_;
  int nodes_welcomed_ = 0;
  std::vector<int> rechecks_;  // links
  std::vector<int> held_links_;  // node links holding messages of this turn
  std::priority_queue<Wakeup, std::vector<Wakeup>, std::greater<Wakeup>> wakeups_;
  std::map<tuners::TrialId, std::pair<std::string, double>> checkpoints_;  // newest per trial
  std::string checkpoint_dir_;
  proto::Hello hello_;
  int welcomed_ = 0;
  int ever_welcomed_ = 0;
  int rejoins_ = 0;
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
  double first_job_idle_seconds_ = 0;
  double lateness_ = 0;
  double max_lateness_ = 0;
  std::int64_t fired_ = 0;
  double busy_seconds_ = 0;
};

}  // namespace packtune::bench
