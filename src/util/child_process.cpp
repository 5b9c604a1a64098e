#include "util/child_process.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

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

// execve's argv and envp, pointing into strings held here: neither copied nor moved, since a
// short string moved would take its characters along.
struct ExecVectors {
  ExecVectors(const std::vector<std::string>& args, const std::vector<std::pair<std::string, std::string>>& set)
      : env(child_environment(set)) {
    for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
  }
  ExecVectors(const ExecVectors&) = delete;
  ExecVectors& operator=(const ExecVectors&) = delete;

  const std::vector<std::string> env;
  std::vector<char*> envp;
  std::vector<char*> argv;
};

// Where a child's streams go, decided before fork for the same reason.
struct ChildStreams {
  const char* output = nullptr;  // stdout and stderr appended to or truncating this file
  int output_flags = 0;
  bool own_group = false;
};

int fork_child(const std::vector<std::string>& argv_in,
               const std::vector<std::pair<std::string, std::string>>& env_in, const ChildStreams& streams) {
  const ExecVectors exec(argv_in, env_in);
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
    execve(exec.argv[0], exec.argv.data(), exec.envp.data());
    _exit(127);
  }
  // Set here too: a kill of the group right after this returns must not find the child
  // still in ours.
  if (streams.own_group) setpgid(pid, pid);
  return pid;
}

// The reaper (start_piped_child_process): a forked copy of a process that may have threads,
// so from fork to exit it makes only async-signal-safe calls and allocates nothing.

// The signals the reaper waits for: a child's end, and the requests to end everything.
sigset_t reaper_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (const int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
  return set;
}

// A pid written in decimal and nothing else, or -1.
pid_t pid_of(const char* text) {
  if (*text == '\0') return -1;
  std::int64_t value = 0;
  for (; *text != '\0'; ++text) {
    if (*text < '0' || *text > '9' || value > (std::int64_t{1} << 31)) return -1;
    value = value * 10 + (*text - '0');
  }
  return static_cast<pid_t>(value);
}

// The parent of `pid` as /proc/PID/stat gives it ("PID (COMM) STATE PPID ..."; COMM may hold
// anything, a ')' too, so the last one ends it), or -1 when it cannot be read.
pid_t parent_of(pid_t pid) {
  char path[40] = "/proc/";
  char digits[16];
  int n = 0;
  for (pid_t rest = pid; rest > 0; rest /= 10) digits[n++] = static_cast<char>('0' + rest % 10);
  int at = 6;
  while (n > 0) path[at++] = digits[--n];
  for (const char* tail = "/stat"; *tail != '\0'; ++tail) path[at++] = *tail;
  path[at] = '\0';
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char stat[512];
  const ssize_t got = read(fd, stat, sizeof stat - 1);
  close(fd);
  if (got <= 0) return -1;
  stat[got] = '\0';
  const char* end_of_name = nullptr;
  for (const char* c = stat; *c != '\0'; ++c) {
    if (*c == ')') end_of_name = c;
  }
  // ") S PPID "
  if (end_of_name == nullptr || end_of_name[1] != ' ' || end_of_name[2] == '\0' || end_of_name[3] != ' ') return -1;
  std::int64_t parent = 0;
  const char* c = end_of_name + 4;
  if (*c < '0' || *c > '9') return -1;
  for (; *c >= '0' && *c <= '9'; ++c) parent = parent * 10 + (*c - '0');
  return static_cast<pid_t>(parent);
}

// SIGKILL to every child of this process: /proc's pids whose parent is this one. A child is
// ours until we reap it, so its pid cannot have gone to another process meanwhile. False when
// /proc cannot be read.
bool kill_children() {
  const pid_t self = getpid();
  const int proc = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (proc < 0) return false;
  struct Entry {
    std::uint64_t inode;
    std::int64_t offset;
    unsigned short length;
    unsigned char type;
    char name[1];
  };
  alignas(8) char entries[8192];
  long got = 0;
  while ((got = syscall(SYS_getdents64, proc, entries, sizeof entries)) > 0) {
    for (long at = 0; at < got;) {
      const auto* entry = reinterpret_cast<const Entry*>(entries + at);
      at += entry->length;
      const pid_t pid = pid_of(entry->name);
      if (pid > 0 && pid != self && parent_of(pid) == self) kill(pid, SIGKILL);
    }
  }
  close(proc);
  return true;
}

// Every file the reaper holds from its parent, from `first` on: its copies of the parent's
// pipe ends would keep the command's input open after the parent closed it.
void close_from(int first) {
  if (syscall(SYS_close_range, first, ~0U, 0) == 0) return;
  rlimit files{};
  const rlim_t last = getrlimit(RLIMIT_NOFILE, &files) == 0 ? std::min<rlim_t>(files.rlim_cur, 1 << 16) : 1024;
  for (rlim_t fd = static_cast<rlim_t>(first); fd < last; ++fd) close(static_cast<int>(fd));
}

// Ends the reaper as the command ended: its exit status, or its signal (without a core dump:
// the command's own dump, if any, was its business).
[[noreturn]] void end_as(int status) {
  if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
  const int signal_number = WTERMSIG(status);
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  sigaction(signal_number, &default_action, nullptr);
  sigset_t just_it;
  sigemptyset(&just_it);
  sigaddset(&just_it, signal_number);
  sigprocmask(SIG_UNBLOCK, &just_it, nullptr);
  kill(getpid(), signal_number);
  _exit(128 + signal_number);
}

// The reaper, in its own process group with the reaper signals blocked: adopts every orphan
// among the command's descendants (a subreaper), starts the command in a process group of its
// own with `stdin_fd` and `stdout_fd` as its stdin and stdout and the mask `command_mask`,
// and waits. When the command exits, or SIGTERM, SIGINT or SIGHUP comes (from its parent, or
// when its parent dies), it kills the command's group and then every process it has for a
// child until none is left, reaping each: what called setsid, and whatever held the command's
// stdout, end too. It then ends as the command did.
[[noreturn]] void run_reaper(char* const* argv, char* const* envp, int stdin_fd, int stdout_fd,
                             const sigset_t& command_mask) {
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  // A parent that ignores SIGCHLD would have its children reaped by the kernel, unseen.
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  sigaction(SIGCHLD, &default_action, nullptr);
  // Moved above stderr first (a pipe may have got number 0 or 1, the parent's being closed),
  // then dup2 makes copies without close-on-exec; everything else is closed, so that the
  // command gets stdin, stdout and stderr only and the reaper holds no end of a pipe.
  const int command_in = fcntl(stdin_fd, F_DUPFD, STDERR_FILENO + 1);
  const int command_out = fcntl(stdout_fd, F_DUPFD, STDERR_FILENO + 1);
  if (command_in < 0 || command_out < 0 || dup2(command_in, STDIN_FILENO) < 0 ||
      dup2(command_out, STDOUT_FILENO) < 0) {
    _exit(127);
  }
  close_from(STDERR_FILENO + 1);
  const pid_t reaper = getpid();
  const pid_t command = fork();
  if (command < 0) _exit(127);
  if (command == 0) {
    // The reaper killed with -9 cannot kill the command; the kernel does.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != reaper) _exit(1);
    setpgid(0, 0);
    sigprocmask(SIG_SETMASK, &command_mask, nullptr);
    execve(argv[0], argv, envp);
    _exit(127);
  }
  setpgid(command, command);
  const int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    dup2(null, STDIN_FILENO);
    dup2(null, STDOUT_FILENO);
    close(null);
  }
  const sigset_t waited = reaper_signals();
  int status = 0;
  bool ended = false;
  while (!ended) {
    siginfo_t info{};
    const int signal_number = sigwaitinfo(&waited, &info);
    if (signal_number < 0) continue;  // EINTR
    if (signal_number != SIGCHLD) break;
    int child_status = 0;
    pid_t child = 0;
    while ((child = waitpid(-1, &child_status, WNOHANG)) > 0) {
      if (child == command) {
        status = child_status;
        ended = true;
      }
    }
  }
  // The command's pid is its group's until it is reaped, so the group is the command's.
  if (!ended) kill(-command, SIGKILL);
  // A child killed hands its own children to the reaper before it can be reaped, so after each
  // reaping every descendant left is a child here, and the next pass kills it.
  while (kill_children()) {
    int child_status = 0;
    const pid_t child = waitpid(-1, &child_status, 0);
    if (child == command) {
      status = child_status;
      ended = true;
    }
    if (child < 0 && errno != EINTR) break;  // ECHILD: nothing is left
  }
  // Without /proc, only the command's group could be killed; the rest is left as it was.
  if (!ended) {
    while (waitpid(command, &status, 0) < 0 && errno == EINTR) {
    }
  }
  end_as(status);
}

}  // namespace

int start_child_process(const std::vector<std::string>& argv,
                        const std::vector<std::pair<std::string, std::string>>& env, const std::string& output,
                        bool append_output, bool own_group) {
  ChildStreams streams;
  streams.own_group = own_group;
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
  const ExecVectors exec(argv, {});

  // The reaper's signals are blocked from its first instruction on: one that came before it
  // could wait for them would end it before it killed anything.
  sigset_t blocked = reaper_signals();
  sigset_t original;
  pthread_sigmask(SIG_BLOCK, &blocked, &original);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent) _exit(1);
    setpgid(0, 0);
    run_reaper(exec.argv.data(), exec.envp.data(), in[0], out[1], original);
  }
  const int err = errno;
  pthread_sigmask(SIG_SETMASK, &original, nullptr);
  close(in[0]);
  close(out[1]);
  if (pid < 0) {
    close(in[1]);
    close(out[0]);
    return -err;
  }
  // Set here too: a signal to the group right after this returns must not find the reaper
  // still in ours.
  setpgid(pid, pid);
  fcntl(in[1], F_SETFL, fcntl(in[1], F_GETFL) | O_NONBLOCK);
  fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
  to_child = in[1];
  from_child = out[0];
  return pid;
}

}  // namespace packtune::util
