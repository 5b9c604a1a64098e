#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "../../reaped.hpp"
#include "util/line_process.hpp"

using namespace packtune;
using testing::reaped_and_gone;
using util::LineProcess;

namespace {

// Grace long enough that a child which exits at the end of its input always does so first,
// however loaded the machine: finish() returns as soon as it has.
constexpr double kGrace = 600;

// Until the child has exited, without reaping it.
void wait_exited(pid_t pid) {
  siginfo_t info{};
  ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT);
}

// Runs `body` in a copy of the test process that adopts the orphans of its descendants (a
// subreaper), so that how a line process's own child ended can be waited for; the test's own
// process must not become a subreaper. Returns body's result, 0 for success (13: it threw).
int in_subreaper(const std::function<int()>& body) {
  const pid_t helper = ::fork();
  if (helper < 0) return -1;
  if (helper == 0) {
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    int result = 13;
    try {
      result = body();
    } catch (...) {
    }
    ::_exit(result);  // not into Catch: this is a copy of the test process
  }
  int status = 0;
  ::waitpid(helper, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The pid a line process answers an empty request with (in these tests, its own child's), or
// -1 when it does not answer.
pid_t answered_pid(LineProcess& child) {
  const auto answer = child.ask("", kGrace);
  return answer.outcome == LineProcess::Outcome::Answered ? static_cast<pid_t>(std::stol(answer.line)) : -1;
}

// In in_subreaper: sends SIGTERM to `orphan`, one it adopted, and returns the signal that ended
// it. A SIGKILL fixes the exit status when it is sent, so the SIGTERM after it changes nothing;
// without one, the SIGTERM ends it, and no wait is needed to tell the two apart.
int signal_that_ends(pid_t orphan) {
  ::kill(orphan, SIGTERM);
  int status = 0;
  if (::waitpid(orphan, &status, 0) != orphan || !WIFSIGNALED(status)) return 0;
  return WTERMSIG(status);
}

}  // namespace

TEST_CASE("a line process answers each request with a line, and exits at the end of its input") {
  LineProcess child({"/bin/sh", "-c", "while read line; do echo \"got $line\"; done"});
  const pid_t pid = child.pid();
  auto answer = child.ask("one", kGrace);
  CHECK(answer.outcome == LineProcess::Outcome::Answered);
  CHECK(answer.line == "got one");
  answer = child.ask("two", kGrace);
  CHECK(answer.line == "got two");
  CHECK(child.finish(kGrace) == "exited with status 0");
  CHECK(child.finish(0) == "exited with status 0");
  CHECK(reaped_and_gone(pid));
}

TEST_CASE("a line process that ends before answering says how it ended") {
  // An exit status, a signal, and half a line before the end.
  for (const auto& [command, ended] : std::vector<std::pair<std::string, std::string>>{
           {"exit 3", "exited with status 3"},
           {"kill -9 $$", "was killed by signal 9 (Killed)"},
           {"printf partial", "exited with status 0"}}) {
    LineProcess child({"/bin/sh", "-c", command});
    CHECK(child.ask("x", kGrace).outcome == LineProcess::Outcome::Closed);
    CHECK(child.finish(kGrace) == ended);
  }
}

TEST_CASE("writing to a line process that is gone is an outcome, not SIGPIPE") {
  LineProcess child({"/bin/sh", "-c", "exit 0"});
  wait_exited(child.pid());
  // Its stdin has no reader now: the write fails with EPIPE, and this test process lives on.
  CHECK(child.ask("x", kGrace).outcome == LineProcess::Outcome::Closed);
  CHECK(child.ask("y", kGrace).outcome == LineProcess::Outcome::Closed);
}

TEST_CASE("a line process that never answers times out and is killed and reaped") {
  SECTION("it reads nothing and writes nothing") {
    LineProcess child({"/bin/sh", "-c", "exec sleep 1000"});
    const pid_t pid = child.pid();
    CHECK(child.ask("x", 0.2).outcome == LineProcess::Outcome::TimedOut);
    CHECK(child.finish(0) == "was still running, so it was killed");
    CHECK(reaped_and_gone(pid));
  }
  SECTION("a request larger than the pipe holds, to a child that does not read") {
    LineProcess child({"/bin/sh", "-c", "exec sleep 1000"});
    CHECK(child.ask(std::string(std::size_t{4} << 20, 'x'), 0.2).outcome == LineProcess::Outcome::TimedOut);
  }
}

TEST_CASE("a line process waits as long as asked, however long, even past what the clock counts") {
  // It exits a moment after its input ends; a grace the clock cannot count is no limit, so
  // finish waits for that, however long the moment is.
  LineProcess child({"/bin/sh", "-c", "while read line; do echo \"got $line\"; done; sleep 0.1"});
  for (const double timeout : {1e9, 1e10, 1e300, HUGE_VAL}) {
    const auto answer = child.ask("x", timeout);
    CHECK(answer.outcome == LineProcess::Outcome::Answered);
    CHECK(answer.line == "got x");
  }
  CHECK(child.finish(1e10) == "exited with status 0");
}

TEST_CASE("a line process that someone else reaped is left alone, its group too") {
  // Its number may be another process's by now, even another group's leader: so no kill, and
  // what it started runs on.
  CHECK(in_subreaper([] {
    // It reads the request before it answers and exits, so the request always finds it.
    LineProcess child({"/bin/sh", "-c", "read l; sleep 1000 & echo $!"});
    const pid_t grandchild = answered_pid(child);
    if (grandchild < 0) return 10;
    if (::waitpid(child.pid(), nullptr, 0) != child.pid()) return 11;
    if (child.finish(0) != "ended (its exit status was taken by someone else)") return 14;
    return signal_that_ends(grandchild) == SIGTERM ? 0 : 12;
  }) == 0);
}

TEST_CASE("a line process's end kills what it started too") {
  // The child's own child outlives it unless its process group is killed.
  CHECK(in_subreaper([] {
    LineProcess child({"/bin/sh", "-c", "sleep 1000 & echo $!; wait"});
    const pid_t grandchild = answered_pid(child);
    if (grandchild < 0) return 10;
    child.finish(0);
    return signal_that_ends(grandchild) == SIGKILL ? 0 : 12;
  }) == 0);
}

TEST_CASE("SIGTERM kills what line processes started, then ends the process as it would have") {
  // A process that made a line process, then got SIGTERM before finishing it: its child's own
  // child, which would live on, is killed too.
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  CHECK(in_subreaper([&pipe_fds] {
    const pid_t owner = ::fork();
    if (owner < 0) return 13;
    if (owner == 0) {
      ::close(pipe_fds[0]);
      // As a program starts: Catch handles SIGTERM in the test process, and
      // kill_groups_on_termination_signals leaves a handled signal alone.
      ::signal(SIGTERM, SIG_DFL);
      try {
        LineProcess::kill_groups_on_termination_signals();
        LineProcess child({"/bin/sh", "-c", "sleep 1000 & echo $!; wait"});
        const pid_t pids[2] = {child.pid(), answered_pid(child)};
        if (pids[1] < 0) ::_exit(10);
        if (::write(pipe_fds[1], pids, sizeof pids) != sizeof pids) ::_exit(13);
        ::raise(SIGTERM);
      } catch (...) {
      }
      ::_exit(13);
    }
    ::close(pipe_fds[1]);
    pid_t pids[2] = {-1, -1};
    if (::read(pipe_fds[0], pids, sizeof pids) != sizeof pids) return 10;
    int status = 0;
    // The owner ended by the signal itself, not by a status of the handler's choosing.
    if (::waitpid(owner, &status, 0) != owner || !WIFSIGNALED(status) || WTERMSIG(status) != SIGTERM) return 14;
    // Its child came to us when it ended; its grandchild comes when the child has ended.
    if (::waitpid(pids[0], &status, 0) != pids[0]) return 11;
    return signal_that_ends(pids[1]) == SIGKILL ? 0 : 12;
  }) == 0);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}
