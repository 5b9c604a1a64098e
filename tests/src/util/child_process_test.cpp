#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "../../temp_dir.hpp"
#include "util/child_process.hpp"

using namespace packtune;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int wait_for(int pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return status;
}

}  // namespace

TEST_CASE("a child runs with the parent's environment and its own variables, its output in a file") {
  testing::TempDir dir;
  const auto log = dir.file("child.log");
  ::setenv("PACKTUNE_TEST_KEPT", "kept", 1);
  ::setenv("PACKTUNE_TEST_REPLACED", "old", 1);
  const int pid = util::start_child_process(
      {"/bin/sh", "-c", "echo $PACKTUNE_TEST_KEPT $PACKTUNE_TEST_REPLACED $PACKTUNE_TEST_NEW; echo err >&2; exit 3"},
      {{"PACKTUNE_TEST_REPLACED", "new"}, {"PACKTUNE_TEST_NEW", "added"}}, log, false);
  REQUIRE(pid > 0);
  const int status = wait_for(pid);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 3);
  CHECK(read_file(log) == "kept new added\nerr\n");
  ::unsetenv("PACKTUNE_TEST_KEPT");
  ::unsetenv("PACKTUNE_TEST_REPLACED");
}

TEST_CASE("a child's output is appended to or replaces what the file held") {
  testing::TempDir dir;
  const auto log = dir.file("child.log");
  wait_for(util::start_child_process({"/bin/sh", "-c", "echo one"}, {}, log, false));
  wait_for(util::start_child_process({"/bin/sh", "-c", "echo two"}, {}, log, true));
  CHECK(read_file(log) == "one\ntwo\n");
  wait_for(util::start_child_process({"/bin/sh", "-c", "echo three"}, {}, log, false));
  CHECK(read_file(log) == "three\n");
}

TEST_CASE("a child whose executable cannot run exits with code 127") {
  testing::TempDir dir;
  const int status = wait_for(util::start_child_process({dir.file("no-such-program")}, {}, dir.file("log"), false));
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 127);
}

TEST_CASE("a child dies with its parent, even a parent killed with -9") {
  testing::TempDir dir;
  // The test's own process must stay: a go-between starts the child and is killed. A process
  // of our own adopts the orphan (a subreaper), so its end can be waited for.
  const pid_t reaper = ::fork();
  REQUIRE(reaper >= 0);
  if (reaper == 0) {
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    int ready[2];
    if (::pipe(ready) != 0) ::_exit(10);
    const pid_t parent = ::fork();
    if (parent == 0) {
      const int child = util::start_child_process({"/bin/sleep", "60"}, {}, dir.file("log"), false);
      if (::write(ready[1], &child, sizeof child) != sizeof child) ::_exit(9);
      ::pause();
      ::_exit(0);
    }
    int child = -1;
    if (::read(ready[0], &child, sizeof child) != sizeof child || child <= 0) ::_exit(11);
    // Killed before the child's prctl, the parent would leave a child that exits 1 on its own
    // check instead: wait until it runs sleep, past both.
    for (std::string comm; comm != "sleep\n";) {
      std::ifstream file("/proc/" + std::to_string(child) + "/comm");
      comm.assign(std::istreambuf_iterator<char>(file), {});
      if (comm.empty()) ::_exit(15);  // gone already
      if (comm != "sleep\n") ::usleep(1000);
    }
    ::kill(parent, SIGKILL);
    ::waitpid(parent, nullptr, 0);
    // The orphan is ours now; SIGTERM from the kernel ends it (sleep's own end is exit 0).
    int status = 0;
    if (::waitpid(child, &status, 0) != child) ::_exit(12);
    ::_exit(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM ? 0 : 14);
  }
  const int status = wait_for(reaper);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
