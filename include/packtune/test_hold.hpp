#pragma once
// A test hook that stops a process at a named point, so that fault tests act at that point
// without racing the run (a test that polls and hopes the run has not gone past it yet fails on
// a fast machine and passes on a slow one).
//
//   PACKTUNE_TEST_HOLD=POINT[#N]:FILE
//
// The N-th time (default the first) this process reaches POINT, it creates FILE holding its
// pid and sleeps until FILE is removed (then goes on) or it is killed. Only
// the first process to create FILE holds: one restarted after the test killed it, or a second
// actor reaching the same point, goes on. Without the variable a point costs one getenv.
//
// The points (grep for test_hold to find them):
//   driver.reported          the driver wrote a report into results.jsonl
//   driver.result            the driver's loop, once a job has completed
//   driver.promoted          the driver journaled a job that resumes a trial (a promotion)
//   driver.exploit           the driver committed a pbt exploit's job, before copying the donor's checkpoint
//   driver.verifying         a worker of the driver's checkpoint store is about to verify an upload
//   actor.assigned           an actor got a job (an Assign)
//   actor.testing            an actor got the test evaluation of the best trial
//   actor.reported           an actor sent a report that is not its job's last
//   actor.checkpoint_tmp     an actor created a checkpoint's temporary file, not yet renamed
//   actor.checkpoint_inside  an actor told the driver of a checkpoint it took inside a job
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <chrono>

namespace packtune {

// PACKTUNE_TEST_HOLD, read once: `point` is empty when it is unset or not POINT[#N]:FILE.
struct TestHoldSpec {
  std::string point;
  long nth = 1;
  std::string file;
};

inline const TestHoldSpec& test_hold_spec() {
  static const TestHoldSpec parsed = [] {
    TestHoldSpec spec;
    const char* value = std::getenv("PACKTUNE_TEST_HOLD");
    if (!value || !*value) return spec;
    const std::string s = value;
    const auto colon = s.find(':');
    if (colon == std::string::npos) return spec;
    spec.point = s.substr(0, colon);
    if (const auto hash = spec.point.find('#'); hash != std::string::npos) {
      spec.nth = std::strtol(spec.point.c_str() + hash + 1, nullptr, 10);
      spec.point.resize(hash);
    }
    spec.file = s.substr(colon + 1);
    return spec;
  }();
  return parsed;
}

// Whether PACKTUNE_TEST_HOLD names `point` (whichever N-th arrival it holds at): a caller
// that must first make its state visible (the driver's commit) does so only then.
inline bool test_hold_armed(const char* point) {
  const auto& spec = test_hold_spec();
  return !spec.point.empty() && spec.point == point;
}

inline void test_hold(const char* point) {
  if (!test_hold_armed(point)) return;
  const auto& spec = test_hold_spec();
  // One counter per process: the hook holds one point, whichever it is.
  static std::atomic<long> reached{0};  // checkpoints are written on threads of their own
  if (++reached != spec.nth) return;
  const std::string& file = spec.file;
  // The pid goes in before FILE appears: written to a file of this process, then linked to
  // FILE, which fails if another process made FILE first.
  const std::string mine = file + "." + std::to_string(::getpid());
  const int fd = ::open(mine.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const std::string pid = std::to_string(::getpid()) + "\n";
  [[maybe_unused]] auto written = ::write(fd, pid.data(), pid.size());
  ::close(fd);
  const bool first = ::link(mine.c_str(), file.c_str()) == 0;
  ::unlink(mine.c_str());
  if (!first) return;
  while (::access(file.c_str(), F_OK) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

}  // namespace packtune
