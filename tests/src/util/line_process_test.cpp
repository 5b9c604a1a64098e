#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
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
// subreaper), so that a line process's own child can be waited for by someone else; the
// test's own process must not become a subreaper. Returns body's result, 0 for success (13: it threw).
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

// The line a line process answers an empty request with, or "" when it does not answer.
std::string answered_line(LineProcess& child) {
  const auto answer = child.ask("", kGrace);
  return answer.outcome == LineProcess::Outcome::Answered ? answer.line : std::string();
}

// The pid a line process answers an empty request with (in these tests, its own child's), or
// -1 when it does not answer.
pid_t answered_pid(LineProcess& child) {
  const auto line = answered_line(child);
  return line.empty() ? -1 : static_cast<pid_t>(std::stol(line));
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

TEST_CASE("a line process that someone else reaped is left alone") {
  // Its number may be another process's by now, even another group's leader: so no signal.
  CHECK(in_subreaper([] {
    // It reads the request before it answers and exits, so the request always finds it.
    LineProcess child({"/bin/sh", "-c", "read l; echo answer"});
    if (answered_line(child) != "answer") return 10;
    if (::waitpid(child.pid(), nullptr, 0) != child.pid()) return 11;
    return child.finish(0) == "ended (its exit status was taken by someone else)" ? 0 : 14;
  }) == 0);
}

TEST_CASE("a line process's end kills what it started too, even what left its process group") {
  // The child's own children outlive it unless its reaper kills them: one in the child's
  // process group, one in a session of its own. finish() returns once they are reaped, so
  // neither pid is anyone's then.
  for (const std::string start : {"sleep 1000", "setsid sleep 1000"}) {
    INFO(start);
    LineProcess child({"/bin/sh", "-c", start + " & echo $!; wait"});
    const pid_t grandchild = answered_pid(child);
    REQUIRE(grandchild > 0);
    child.finish(0);
    const bool gone = ::kill(grandchild, 0) == -1 && errno == ESRCH;
    if (!gone) ::kill(grandchild, SIGKILL);
    CHECK(gone);
  }
}

TEST_CASE("a line process that exits while what it started holds its output ends there, with its status") {
  // The grandchild holds the child's stdout; without the reaper killing it at the child's
  // exit, the answer would never end and the ask would time out.
  LineProcess child({"/bin/sh", "-c", "setsid sleep 1000 & echo $!; read l; exit 3"});
  const pid_t grandchild = answered_pid(child);
  REQUIRE(grandchild > 0);
  const auto outcome = child.ask("x", kGrace).outcome;
  const auto ended = child.finish(kGrace);
  const bool gone = ::kill(grandchild, 0) == -1 && errno == ESRCH;
  if (!gone) ::kill(grandchild, SIGKILL);
  CHECK(outcome == LineProcess::Outcome::Closed);
  CHECK(ended == "exited with status 3");
  CHECK(gone);
}

TEST_CASE("SIGTERM ends what line processes started, then ends the process as it would have") {
  // A process that made a line process, then got SIGTERM before finishing it: its child's own
  // child, which left the child's process group, is gone by the time the process has ended.
  int pipe_fds[2];
  REQUIRE(::pipe(pipe_fds) == 0);
  const pid_t owner = ::fork();
  REQUIRE(owner >= 0);
  if (owner == 0) {
    ::close(pipe_fds[0]);
    // As a program starts: Catch handles SIGTERM in the test process, and
    // end_children_on_termination_signals leaves a handled signal alone.
    ::signal(SIGTERM, SIG_DFL);
    try {
      LineProcess::end_children_on_termination_signals();
      LineProcess child({"/bin/sh", "-c", "setsid sleep 1000 & echo $!; wait"});
      const pid_t grandchild = answered_pid(child);
      if (grandchild < 0) ::_exit(10);
      if (::write(pipe_fds[1], &grandchild, sizeof grandchild) != sizeof grandchild) ::_exit(13);
      ::raise(SIGTERM);
    } catch (...) {
    }
    ::_exit(13);  // not into Catch: this is a copy of the test process
  }
  ::close(pipe_fds[1]);
  pid_t grandchild = -1;
  const bool told = ::read(pipe_fds[0], &grandchild, sizeof grandchild) == sizeof grandchild;
  ::close(pipe_fds[0]);
  int status = 0;
  REQUIRE(::waitpid(owner, &status, 0) == owner);
  // The owner ended by the signal itself, not by a status of the handler's choosing.
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
  REQUIRE(told);
  const bool gone = ::kill(grandchild, 0) == -1 && errno == ESRCH;
  if (!gone) ::kill(grandchild, SIGKILL);
  CHECK(gone);
}
