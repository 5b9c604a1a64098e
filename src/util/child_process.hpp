#pragma once
// Starting a child process in the sandbox packtune's processes run their children in (the
// actors a node or a driver supervises, the command of `simulate --objective exec:CMD`): the
// child dies with its parent, even a parent killed with -9, so no actor trains on for a driver
// that is gone (and a piped child's descendants go with it); its stdout and stderr go to a log
// file, or its stdin and stdout to pipes; its environment is the parent's with some variables
// set.
#include <string>
#include <utility>
#include <vector>

namespace packtune::util {

// Starts argv[0] (a path, not looked up in PATH) with arguments argv[1...] and the parent's
// environment with `env` set or replaced. stdout and stderr go to `output`, appended to or
// truncated; a child that cannot open it writes where the parent does. The child gets SIGTERM
// when the thread that started it ends. With `own_group`, the child leads a process group of
// its own (its id is the pid), so that killing the group also ends what the child started.
// Returns the child's pid, or minus the errno of a fork that failed; a child whose exec fails
// exits with code 127.
int start_child_process(const std::vector<std::string>& argv,
                        const std::vector<std::pair<std::string, std::string>>& env, const std::string& output,
                        bool append_output, bool own_group = false);

// Starts argv like start_child_process, with the parent's environment, under a reaper: a
// process of this one's (the pid returned), in a process group of its own, that adopts every
// orphan among argv's descendants (PR_SET_CHILD_SUBREAPER), so that none escapes, not even one
// that called setsid. argv runs in a process group of its own; its stdin reads from a pipe
// whose other end is `to_child`, its stdout writes into one read from `from_child`, its stderr
// is the parent's, and it holds no other file of the parent's. When argv exits, or the reaper
// gets SIGTERM, SIGINT or SIGHUP (the parent's end sends it SIGTERM, even an end by -9), the
// reaper kills argv and everything it started, reaps them all, and then ends as argv did: with
// its exit status, or killed by its signal. So its parent's stdout pipe ends when argv ends,
// whoever else held it. Both ends are non-blocking and close on exec. Returns the pid, or
// minus the errno of a pipe or fork that failed (nothing is open then).
int start_piped_child_process(const std::vector<std::string>& argv, int& to_child, int& from_child);

}  // namespace packtune::util
