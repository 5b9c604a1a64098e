#include <catch2/catch.hpp>

#include <signal.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "../../temp_dir.hpp"
#include "node/actor_supervisor.hpp"

using namespace packtune;
using Kind = SupervisorEvent::Kind;

namespace {

ActorCommand shell(const std::string& script) { return {{"/bin/sh", "-c", script}, {}}; }

// Polls (in real time) until an event of `kind` comes; fails after 5 s.
SupervisorEvent wait_for(ActorSupervisor& supervisor, Kind kind) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    for (const auto& e : supervisor.poll()) {
      if (e.kind == kind) return e;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  FAIL("no event of the expected kind within 5 s");
  return {};
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("restart delays double from the first and stop at the cap") {
  SupervisorOptions o;
  std::vector<double> delays;
  for (int r = 0; r < 7; ++r) delays.push_back(ActorSupervisor::restart_delay(o, r));
  CHECK(delays == std::vector<double>{1, 2, 4, 8, 16, 30, 30});
  CHECK(ActorSupervisor::restart_delay(o, 1000) == 30);
}

TEST_CASE("a slot that keeps failing restarts after growing delays, then is given up") {
  testing::TempDir dir;
  auto fake = std::chrono::steady_clock::now();
  SupervisorOptions o;
  o.log_dir = dir.file("logs");
  o.max_restarts = 2;
  ActorSupervisor supervisor(o, [&] { return fake; });
  supervisor.start(shell("echo run; exit 3"));

  auto exited = wait_for(supervisor, Kind::Exited);
  CHECK(exited.how == "exited with code 3");
  CHECK(exited.restarting);
  CHECK(supervisor.active() == 1);
  CHECK(supervisor.running() == 0);
  // Not before its delay (1 s on the injected clock), at once after it.
  fake += std::chrono::milliseconds(990);
  CHECK(supervisor.poll().empty());
  fake += std::chrono::milliseconds(10);
  auto restarted = supervisor.poll();
  REQUIRE(restarted.size() == 1);
  CHECK(restarted[0].kind == Kind::Restarted);
  CHECK(restarted[0].restarts == 1);

  CHECK(wait_for(supervisor, Kind::Exited).restarting);
  fake += std::chrono::milliseconds(1990);  // the second delay is 2 s
  CHECK(supervisor.poll().empty());
  fake += std::chrono::milliseconds(10);
  CHECK(wait_for(supervisor, Kind::Restarted).restarts == 2);

  auto gave_up = wait_for(supervisor, Kind::GaveUp);
  CHECK(gave_up.how == "exited with code 3");
  CHECK(supervisor.gave_up(0));
  CHECK(supervisor.active() == 0);
  fake += std::chrono::hours(1);
  CHECK(supervisor.poll().empty());

  // Every run is in the log, each restart after a line that says why.
  const auto log = read_file(supervisor.log_path(0));
  CHECK(log.find("run\n\n----- ") == log.find("run"));
  CHECK(log.find("restart 1 of 2 (the previous process exited with code 3)") != std::string::npos);
  CHECK(log.find("restart 2 of 2") != std::string::npos);
  std::size_t runs = 0;
  for (auto at = log.find("run\n"); at != std::string::npos; at = log.find("run\n", at + 1)) ++runs;
  CHECK(runs == 3);
}

TEST_CASE("a process that exits on bad input (code 2) is given up at once: a restart would meet it again") {
  testing::TempDir dir;
  SupervisorOptions o;
  o.log_dir = dir.file("logs");
  ActorSupervisor supervisor(o);
  supervisor.start(shell("echo 'device: no CUDA device' >&2; exit 2"));
  std::vector<SupervisorEvent> events;
  for (int i = 0; i < 1000 && events.size() < 2; ++i) {
    for (auto& e : supervisor.poll()) events.push_back(e);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(events.size() == 2);  // in one poll: the exit, and the slot given up
  CHECK(events[0].kind == Kind::Exited);
  CHECK(events[0].input_error);
  CHECK_FALSE(events[0].restarting);
  CHECK(events[1].kind == Kind::GaveUp);
  CHECK(events[1].how == "exited with code 2");
  CHECK(supervisor.gave_up(0));
  CHECK(supervisor.active() == 0);
  CHECK(read_file(supervisor.log_path(0)).find("restart") == std::string::npos);
}

TEST_CASE("a killed process is reported with its signal and restarted, and slots are independent") {
  testing::TempDir dir;
  SupervisorOptions o;
  o.log_dir = dir.file("logs");
  o.first_delay_seconds = 0.01;
  ActorSupervisor supervisor(o);
  supervisor.start(shell("exec sleep 30"));
  supervisor.start(shell("exec sleep 30"));
  REQUIRE(supervisor.running() == 2);
  const int victim = supervisor.pid(1);
  REQUIRE(kill(victim, SIGKILL) == 0);
  auto exited = wait_for(supervisor, Kind::Exited);
  CHECK(exited.local_index == 1);
  CHECK(exited.pid == victim);
  CHECK(exited.how == "killed by signal 9");
  auto restarted = wait_for(supervisor, Kind::Restarted);
  CHECK(restarted.local_index == 1);
  CHECK(restarted.pid != victim);
  CHECK(supervisor.running() == 2);
  CHECK(supervisor.restarts(0) == 0);
  supervisor.stop(0.0, SIGTERM);
  CHECK(supervisor.running() == 0);
}

TEST_CASE("a child gets its own environment and the passive OpenMP wait, and a clean exit is not restarted") {
  testing::TempDir dir;
  SupervisorOptions o;
  o.log_dir = dir.file("logs");
  o.first_delay_seconds = 0;
  ActorSupervisor supervisor(o);
  ActorCommand command = shell("echo \"gpu=$CUDA_VISIBLE_DEVICES omp=$OMP_WAIT_POLICY\"");
  command.env = {{"CUDA_VISIBLE_DEVICES", "2"}};
  supervisor.start(command);
  auto exited = wait_for(supervisor, Kind::Exited);
  CHECK(exited.how == "exited with code 0");
  CHECK_FALSE(exited.restarting);
  CHECK(supervisor.active() == 0);
  const auto log = read_file(supervisor.log_path(0));
  CHECK(log.find("gpu=2 omp=") == 0);
  CHECK(log.find("omp=\n") == std::string::npos);
}

TEST_CASE("after stop_restarting an exit is final, and stop kills what ignores its signal") {
  testing::TempDir dir;
  SupervisorOptions o;
  o.log_dir = dir.file("logs");
  o.first_delay_seconds = 0;
  ActorSupervisor supervisor(o);
  supervisor.start(shell("exit 1"));
  supervisor.start(shell("trap '' TERM; while :; do sleep 0.05; done"));
  supervisor.stop_restarting();
  auto exited = wait_for(supervisor, Kind::Exited);
  CHECK(exited.local_index == 0);
  CHECK_FALSE(exited.restarting);
  CHECK_FALSE(supervisor.gave_up(0));
  CHECK(supervisor.active() == 1);

  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the trap is set
  const auto begin = std::chrono::steady_clock::now();
  supervisor.stop(0.2, SIGTERM);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  CHECK(supervisor.running() == 0);
  CHECK(took >= 0.2);
  CHECK(took < 2);
}

TEST_CASE("kill_hung kills a stopped process, reports why and restarts it; another process is left alone") {
  testing::TempDir dir;
  auto fake = std::chrono::steady_clock::now();
  SupervisorOptions o;
  o.log_dir = dir.file("logs");
  ActorSupervisor supervisor(o, [&] { return fake; });
  supervisor.start(shell("exec sleep 300"));
  const int pid = supervisor.pid(0);
  REQUIRE(kill(pid, SIGSTOP) == 0);
  CHECK_FALSE(supervisor.kill_hung(0, pid + 1, "not its process"));
  CHECK_FALSE(supervisor.kill_hung(1, pid, "no such slot"));
  REQUIRE(supervisor.kill_hung(0, pid, "actor 0: no message for 5 s"));
  const auto exited = wait_for(supervisor, Kind::Exited);
  CHECK(exited.pid == pid);
  CHECK(exited.how == "killed: actor 0: no message for 5 s");
  CHECK(exited.restarting);
  fake += std::chrono::seconds(1);
  const auto restarted = wait_for(supervisor, Kind::Restarted);
  CHECK(restarted.pid != pid);
  CHECK(supervisor.restarts(0) == 1);
  CHECK(read_file(supervisor.log_path(0)).find("the previous process killed: actor 0") != std::string::npos);
}
