#pragma once
// For tests of code that starts child processes: whether a child was reaped (it left no
// zombie behind) and is gone.
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <cerrno>

namespace packtune::testing {

// True once `pid`, a child of this process, has been waited for and no process has its pid.
inline bool reaped_and_gone(pid_t pid) {
  errno = 0;
  const bool reaped = ::waitpid(pid, nullptr, WNOHANG) == -1 && errno == ECHILD;
  errno = 0;
  const bool gone = ::kill(pid, 0) == -1 && errno == ESRCH;
  return reaped && gone;
}

}  // namespace packtune::testing
