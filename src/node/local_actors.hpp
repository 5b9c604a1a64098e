#pragma once
// Actor processes the driver starts on this machine: the same packtune executable, run as
// `packtune actor --driver ENDPOINT --local-index I [--keys DIR]`, its output in DIR/logs/actor-I.log.
#include <string>
#include <vector>

namespace packtune {

struct LocalActorExit {
  int local_index = -1;
  int pid = -1;
  std::string how;  // "exited with code 3", "killed by signal 9"
};

class LocalActors {
 public:
  // `keys_dir`: the CURVE keys actors connect with (the driver listens beyond this machine
  // with keys); empty: none.
  LocalActors(std::string endpoint, std::string log_dir, int threads_per_actor, std::string keys_dir = "");
  ~LocalActors();  // kills what still runs

  void spawn(int count);
  // Processes that ended since the last call.
  std::vector<LocalActorExit> reap();
  // Waits up to `seconds` for every child to exit, then kills the rest.
  void wait_all(double seconds);
  int running() const;
  std::string log_path(int local_index) const;

 private:
  std::string endpoint_;
  std::string log_dir_;
  int threads_;
  std::string keys_dir_;
  std::vector<int> pids_;  // by local index; -1 once reaped
};

// The path of the running executable, so actors run the same build as the driver.
std::string self_executable();

}  // namespace packtune
