#pragma once
// The actor processes of one machine, for the driver (its own actors) and for `packtune node`:
// starts one process per slot, logs each to LOG_DIR/actor-I.log, and restarts a slot whose
// process dies, after 1 s, 2 s, 4 s ... (at most 30 s), up to a number of restarts; then the
// slot is given up. It has no thread: the owner calls poll() in its loop and reacts to the
// events (a node tells the driver, the driver retires the actor).
//
// The command of a slot is the caller's, so tests run /bin/sh instead of actors; the clock
// and the delays are injectable for the same reason.
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace packtune {

// What a slot runs: argv[0] is the executable's path; `env` is set (or replaced) in the
// child's environment only, e.g. CUDA_VISIBLE_DEVICES.
struct ActorCommand {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
};

struct SupervisorOptions {
  std::string log_dir;
  int max_restarts = 3;  // per slot; the next exit gives the slot up
  double first_delay_seconds = 1;
  double max_delay_seconds = 30;
};

struct SupervisorEvent {
  enum class Kind { Exited, Restarted, GaveUp };
  Kind kind = Kind::Exited;
  int local_index = -1;
  int pid = -1;         // the process that exited, or the new one
  std::string how;      // Exited and GaveUp: "exited with code 3", "killed by signal 9"
  bool restarting = false;  // Exited: the slot will start again
  int restarts = 0;     // restarts of the slot so far
  bool input_error = false;  // Exited with code 2: bad input, which a restart would meet again
  bool clean = false;        // Exited with code 0: its driver shut it down; never restarted
};

class ActorSupervisor {
 public:
  using Clock = std::chrono::steady_clock;
  using Now = std::function<Clock::time_point()>;

  explicit ActorSupervisor(SupervisorOptions options, Now now = Clock::now);
  ~ActorSupervisor();  // kills what still runs
  ActorSupervisor(const ActorSupervisor&) = delete;
  ActorSupervisor& operator=(const ActorSupervisor&) = delete;

  // Starts a new slot; returns its local index (0, 1, ...).
  int start(ActorCommand command);
  // Reaps exited processes and starts the slots whose delay has passed.
  std::vector<SupervisorEvent> poll();
  // Kills slot `local_index`'s process with SIGKILL (a stopped one too) if it still is `pid`:
  // a hung actor. poll() then reports its exit as "killed: REASON" and restarts it as after a
  // crash, within the same limits. False when the slot runs no such process.
  bool kill_hung(int local_index, std::int64_t pid, const std::string& reason);
  // From now on an exit is final: nothing restarts (the experiment is over or the owner stops).
  void stop_restarting();
  // stop_restarting(), then sends `signal` (0: none) to every process, waits up to
  // `grace_seconds` for them to exit and kills the rest. Returns their Exited events.
  std::vector<SupervisorEvent> stop(double grace_seconds, int signal = 0);

  int slots() const { return static_cast<int>(slots_.size()); }
  int running() const;
  // Slots running or waiting to restart: what may still train.
  int active() const;
  bool gave_up(int local_index) const { return slots_.at(local_index).gave_up; }
  int restarts(int local_index) const { return slots_.at(local_index).restarts; }
  int pid(int local_index) const { return slots_.at(local_index).pid; }
  std::string log_path(int local_index) const;

  // The delay before restart number `restart` (0 = the first): first * 2^restart, capped.
  static double restart_delay(const SupervisorOptions& options, int restart);

 private:
  struct Slot {
    ActorCommand command;
    int pid = -1;
    int restarts = 0;
    bool waiting = false;  // exited; starts again at `restart_at`
    bool gave_up = false;
    Clock::time_point restart_at;
    std::string last_exit;
    std::string kill_reason;  // kill_hung's, for the exit it causes
  };

  void launch(int local_index, bool restart);
  std::vector<SupervisorEvent> reap();

  SupervisorOptions options_;
  Now now_;
  std::vector<Slot> slots_;
  bool restarting_ = true;
};

// `packtune actor` for slot `local_index` of node `node_id` (0: the driver's own), as the
// driver and `packtune node` start it: this executable, its work folder WORK_DIR/actor-I,
// and the CURVE keys when there are any.
ActorCommand actor_command(const std::string& driver, int node_id, int local_index, int threads,
                           const std::string& work_dir, const std::string& keys);

// The path of the running executable, so actors run the same build as their parent.
std::string self_executable();

}  // namespace packtune
