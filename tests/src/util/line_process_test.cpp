#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

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

TEST_CASE("a line process's end kills what it started too") {
  // The child's own child outlives it unless its process group is killed. A process of ours
  // adopts the orphan (a subreaper), so that how it ended can be waited for; the test's own
  // process must not become a subreaper.
  const pid_t helper = ::fork();
  REQUIRE(helper >= 0);
  if (helper == 0) {
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    pid_t grandchild = -1;
    try {
      LineProcess child({"/bin/sh", "-c", "sleep 1000 & echo $!; wait"});
      const auto answer = child.ask("", kGrace);
      if (answer.outcome != LineProcess::Outcome::Answered) ::_exit(10);
      grandchild = static_cast<pid_t>(std::stol(answer.line));
      child.finish(0);
    } catch (...) {
      ::_exit(13);  // not into Catch: this is a copy of the test process
    }
    // A SIGKILL fixes the exit status when it is sent, so the SIGTERM after it changes
    // nothing; without one, the SIGTERM ends it, and no wait is needed to tell the two apart.
    ::kill(grandchild, SIGTERM);
    int status = 0;
    if (::waitpid(grandchild, &status, 0) != grandchild) ::_exit(11);
    ::_exit(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? 0 : 12);
  }
  int status = 0;
  ::waitpid(helper, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
