#include "util/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

extern char** environ;

namespace packtune::util {
namespace {

// The parent's environment with the command's variables set, built before fork: the child
// of a threaded process must not allocate.
std::vector<std::string> child_environment(const std::vector<std::pair<std::string, std::string>>& set) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const auto name = entry.substr(0, entry.find('='));
    const bool replaced =
        std::any_of(set.begin(), set.end(), [&](const auto& kv) { return kv.first == name; });
    if (!replaced) env.push_back(entry);
  }
  for (const auto& [name, value] : set) env.push_back(name + "=" + value);
  return env;
}

}  // namespace

int start_child_process(const std::vector<std::string>& argv_in,
                        const std::vector<std::pair<std::string, std::string>>& env_in, const std::string& output,
                        bool append_output) {
  const std::vector<std::string> env = child_environment(env_in);
  std::vector<char*> envp;
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (const auto& a : argv_in) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int flags = O_WRONLY | O_CREAT | (append_output ? O_APPEND : O_TRUNC);

  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return -errno;  // not errno itself: freeing the vectors may change it
  if (pid == 0) {
    // A child must not outlive its parent, even when the parent is killed hard; a parent that
    // died before prctl took effect would never send the signal, hence the check after it.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    const int fd = open(output.c_str(), flags, 0644);
    if (fd >= 0) {
      dup2(fd, STDOUT_FILENO);
      dup2(fd, STDERR_FILENO);
      close(fd);
    }
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  return pid;
}

}  // namespace packtune::util
