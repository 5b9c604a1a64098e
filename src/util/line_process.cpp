#include "util/line_process.hpp"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "packtune/error.hpp"
#include "util/child_process.hpp"

namespace packtune::util {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxLine = std::size_t{1} << 20;

// A write to a child that is gone must be an outcome, not the end of packtune: SIGPIPE is held
// back in this thread for the write, and the one it raised taken back, so that neither the
// process's disposition nor a SIGPIPE meant for something else changes.
ssize_t write_without_sigpipe(int fd, const char* data, std::size_t size) {
  sigset_t pipe_signal;
  sigemptyset(&pipe_signal);
  sigaddset(&pipe_signal, SIGPIPE);
  sigset_t pending;
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  sigset_t old_mask;
  pthread_sigmask(SIG_BLOCK, &pipe_signal, &old_mask);
  const ssize_t written = ::write(fd, data, size);
  const int err = errno;
  if (written < 0 && err == EPIPE && !was_pending) {
    const timespec zero{0, 0};
    while (sigtimedwait(&pipe_signal, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  errno = err;
  return written;
}

// Until `fd` is ready for `events` or `deadline` passes: true when ready (or in error, which
// the read or write that follows reports).
bool wait_ready(int fd, short events, Clock::time_point deadline) {
  while (true) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd item{fd, events, 0};
    const int ready = ::poll(&item, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready > 0 || (ready < 0 && errno != EINTR)) return true;
  }
}

// A longer wait than the clock can count (1e10 s is past its nanoseconds' int64) is none:
// converting it would overflow, into a deadline in the past.
Clock::time_point deadline_after(double seconds) {
  constexpr double kForever = 1e9;
  if (!(seconds < kForever)) return Clock::time_point::max();
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// The reapers of the line processes not yet finished, for the signal handler to end: a table
// of atomics, as a handler may take no lock. 0 is a free slot.
std::atomic<pid_t> live_children[64];
static_assert(std::atomic<pid_t>::is_always_lock_free);

void remember_child(pid_t pid) {
  for (auto& slot : live_children) {
    pid_t free = 0;
    if (slot.compare_exchange_strong(free, pid)) return;
  }
}

void forget_child(pid_t pid) {
  for (auto& slot : live_children) {
    pid_t mine = pid;
    if (slot.compare_exchange_strong(mine, 0)) return;
  }
}

// Only async-signal-safe calls. Each reaper, asked to, kills its child and everything that
// child started; waiting for it (it is still this process's unreaped child, so the pid is
// its) means none of them outlives this process. SA_RESETHAND has given the signal its
// default action back and SA_NODEFER lets the raise take it now, so the process ends as the
// signal would have ended it.
extern "C" void end_children_and_end(int signal_number) {
  const int saved_errno = errno;
  for (auto& slot : live_children) {
    const pid_t pid = slot.load();
    if (pid > 0) ::kill(pid, SIGTERM);
  }
  for (auto& slot : live_children) {
    const pid_t pid = slot.exchange(0);
    if (pid <= 0) continue;
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  errno = saved_errno;
  ::raise(signal_number);
}

}  // namespace

void LineProcess::end_children_on_termination_signals() {
  for (const int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction current {};
    // A signal the process ignores (SIGINT under nohup or `&` in a script) stays ignored.
    if (::sigaction(signal_number, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) continue;
    struct sigaction action {};
    action.sa_handler = end_children_and_end;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESETHAND | SA_NODEFER;
    ::sigaction(signal_number, &action, nullptr);
  }
}

LineProcess::LineProcess(const std::vector<std::string>& argv) {
  pid_ = start_piped_child_process(argv, to_child_, from_child_);
  if (pid_ < 0) {
    const int err = -pid_;
    pid_ = -1;
    throw Error("cannot start " + argv.at(0) + ": " + std::strerror(err));
  }
  remember_child(pid_);
}

LineProcess::~LineProcess() { finish(0); }

LineProcess::Answer LineProcess::ask(const std::string& request, double timeout_seconds) {
  const auto deadline = deadline_after(timeout_seconds);
  if (to_child_ < 0) return {Outcome::Closed, {}};
  const std::string text = request + "\n";
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = write_without_sigpipe(to_child_, text.data() + done, text.size() - done);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EAGAIN) {
      if (!wait_ready(to_child_, POLLOUT, deadline)) return {Outcome::TimedOut, {}};
    } else if (!(n < 0 && errno == EINTR)) {
      return {Outcome::Closed, {}};
    }
  }
  while (true) {
    const auto newline = buffer_.find('\n');
    if (newline != std::string::npos || buffer_.size() >= kMaxLine) {
      const std::size_t end = newline != std::string::npos ? newline : kMaxLine;
      Answer answer{Outcome::Answered, buffer_.substr(0, end)};
      buffer_.erase(0, newline != std::string::npos ? end + 1 : end);
      return answer;
    }
    char chunk[4096];
    const ssize_t n = ::read(from_child_, chunk, sizeof chunk);
    if (n > 0) {
      buffer_.append(chunk, static_cast<std::size_t>(n));
    } else if (n < 0 && errno == EAGAIN) {
      if (!wait_ready(from_child_, POLLIN, deadline)) return {Outcome::TimedOut, {}};
    } else if (!(n < 0 && errno == EINTR)) {
      return {Outcome::Closed, {}};
    }
  }
}

std::string LineProcess::finish(double grace_seconds) {
  if (pid_ < 0) return ended_;
  if (to_child_ >= 0) ::close(to_child_);
  to_child_ = -1;
  // Wait for the exit without reaping: the reaper is signalled while the pid is still ours,
  // so that no other process can have been given its number by then.
  const auto deadline = deadline_after(grace_seconds);
  bool exited = false;
  bool reaped_elsewhere = false;
  auto pause = std::chrono::milliseconds(1);
  while (true) {
    siginfo_t info{};
    const int r = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
    if (r == 0 && info.si_pid == pid_) {
      exited = true;
      break;
    }
    reaped_elsewhere = r < 0 && errno == ECHILD;
    if ((r < 0 && errno != EINTR) || Clock::now() >= deadline) break;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
  int status = 0;
  pid_t reaped = -1;
  if (reaped_elsewhere) {
    // Someone else reaped it, so its number may be another process's by now: no signal.
    forget_child(pid_);
  } else {
    // Its reaper ends what is still running, however it got away from the group, and ends
    // itself as the child ended.
    if (!exited) ::kill(pid_, SIGTERM);
    forget_child(pid_);
    while ((reaped = ::waitpid(pid_, &status, 0)) < 0 && errno == EINTR) {
    }
  }
  if (reaped != pid_) {
    ended_ = "ended (its exit status was taken by someone else)";
  } else if (!exited) {
    ended_ = "was still running, so it was killed";
  } else if (WIFEXITED(status)) {
    ended_ = "exited with status " + std::to_string(WEXITSTATUS(status));
  } else {
    ended_ = "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  }
  ::close(from_child_);
  from_child_ = -1;
  pid_ = -1;
  return ended_;
}

}  // namespace packtune::util
