#pragma once
// A child process spoken to one line at a time, request and answer, where neither may stall
// packtune: every exchange has a deadline, and a child that is gone is an outcome rather than a
// SIGPIPE. The child runs under a reaper (start_piped_child_process): when it exits, whatever
// it started is killed, so its output ends with it, and finish() (the destructor calls it)
// ends it and everything it started, setsid or not, and reaps them, so no process or zombie
// is left behind. When this process ends without finish(), even by -9, the reaper still gets
// SIGTERM and does the same; a process which called end_children_on_termination_signals()
// also waits for that when SIGINT, SIGTERM or SIGHUP ends it.
#include <string>
#include <sys/types.h>
#include <vector>

namespace packtune::util {

class LineProcess {
 public:
  enum class Outcome {
    Answered,  // `line` holds the child's next line, without its newline
    Closed,    // the child exited (or closed its output) before a whole line
    TimedOut,  // no whole line within the timeout
  };
  struct Answer {
    Outcome outcome = Outcome::Closed;
    std::string line;
  };

  // Starts argv (a path, not looked up in PATH) with start_piped_child_process: stdin and
  // stdout are pipes to this object, stderr is ours. Throws Error when pipes or fork fail; a
  // program that cannot be executed exits with code 127, seen by the first ask().
  explicit LineProcess(const std::vector<std::string>& argv);
  // finish(0) unless finish was called.
  ~LineProcess();
  LineProcess(const LineProcess&) = delete;
  LineProcess& operator=(const LineProcess&) = delete;

  // Writes `request` and a newline, then reads the child's next line, the two within
  // `timeout_seconds` (1e9 or more: no limit). An answer is at most 1 MiB: the rest of a
  // longer line comes as the next answer.
  Answer ask(const std::string& request, double timeout_seconds);

  // Ends the child: closes its stdin (a child that reads to the end of its input exits by
  // itself), waits up to `grace_seconds` for it to exit, then has its reaper kill it, and
  // waits until the reaper has reaped it and everything it started; a child that someone else
  // reaped is left alone (its number may be another's by then). Returns how it ended, "exited
  // with status 3" or "was killed by signal 9 (Killed)"; a later call returns the same text.
  std::string finish(double grace_seconds);

  pid_t pid() const { return pid_; }

  // From now on SIGINT, SIGTERM and SIGHUP, where this process does not ignore or handle
  // them, first end the line processes not yet finished (up to 64 at once) with everything
  // they started, and wait for that, then end this process as the signal would have. A
  // second call changes nothing.
  static void end_children_on_termination_signals();

 private:
  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  std::string buffer_;  // what the child wrote after the last whole line
  std::string ended_;   // finish()'s text, once it ran
};

}  // namespace packtune::util
