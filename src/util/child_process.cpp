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

// Where a child's streams go, decided before fork for the same reason.
struct ChildStreams {
  const char* output = nullptr;  // stdout and stderr appended to or truncating this file
  int output_flags = 0;
  int stdin_fd = -1;   // dup'ed to stdin when >= 0
  int stdout_fd = -1;  // dup'ed to stdout when >= 0
  bool own_group = false;
};

int fork_child(const std::vector<std::string>& argv_in,
               const std::vector<std::pair<std::string, std::string>>& env_in, const ChildStreams& streams) {
  const std::vector<std::string> env = child_environment(env_in);
  std::vector<char*> envp;
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (const auto& a : argv_in) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) return -errno;  // not errno itself: freeing the vectors may change it
  if (pid == 0) {
    // A child must not outlive its parent, even when the parent is killed hard; a parent that
    // died before prctl took effect would never send the signal, hence the check after it.
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    if (streams.own_group) setpgid(0, 0);
    if (streams.output != nullptr) {
      const int fd = open(streams.output, streams.output_flags, 0644);
      if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        close(fd);
      }
    }
    // dup2 clears close-on-exec on the copy only, so the parent's ends still close at exec;
    // a pipe that got the stream's own number (the parent's was closed) is no copy.
    for (const auto& [fd, stream] :
         {std::pair{streams.stdin_fd, STDIN_FILENO}, std::pair{streams.stdout_fd, STDOUT_FILENO}}) {
      if (fd == stream) fcntl(fd, F_SETFD, 0);
      if (fd >= 0 && fd != stream) dup2(fd, stream);
    }
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  // Set here too: a kill of the group right after this returns must not find the child
  // still in ours.
  if (streams.own_group) setpgid(pid, pid);
  return pid;
}

}  // namespace

int start_child_process(const std::vector<std::string>& argv,
                        const std::vector<std::pair<std::string, std::string>>& env, const std::string& output,
                        bool append_output) {
  ChildStreams streams;
  streams.output = output.c_str();
  streams.output_flags = O_WRONLY | O_CREAT | (append_output ? O_APPEND : O_TRUNC);
  return fork_child(argv, env, streams);
}

int start_piped_child_process(const std::vector<std::string>& argv, int& to_child, int& from_child) {
  int in[2];
  int out[2];
  if (pipe2(in, O_CLOEXEC) != 0) return -errno;
  if (pipe2(out, O_CLOEXEC) != 0) {
    const int err = errno;
    close(in[0]);
    close(in[1]);
    return -err;
  }
  ChildStreams streams;
  streams.stdin_fd = in[0];
  streams.stdout_fd = out[1];
  streams.own_group = true;
  const int pid = fork_child(argv, {}, streams);
  close(in[0]);
  close(out[1]);
  if (pid < 0) {
    close(in[1]);
    close(out[0]);
    return pid;
  }
  fcntl(in[1], F_SETFL, fcntl(in[1], F_GETFL) | O_NONBLOCK);
  fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
  to_child = in[1];
  from_child = out[0];
  return pid;
}

}  // namespace packtune::util
