#include "actors/checkpoint_verify.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>

#include "actors/checkpoint_file.hpp"
#include "packtune/error.hpp"

namespace packtune::actors {
namespace {

namespace fs = std::filesystem;

// in_child's child exits with this when the file was refused (an InputError, its message on
// the pipe); 0 is success, anything else a crash.
constexpr int kVerifyRefused = 3;
constexpr int kChildFailed = 4;  // in_child: the work failed otherwise than on the file

// Runs `work` on `path` in a forked child: HDF5 never runs in the calling process (the
// driver's threads fork, and a child forked while another thread held HDF5's lock would
// inherit it locked). `doing` names the work in messages ("reading it"). The child's
// InputError comes back as one, any other error as Error; a crash, or a child still running
// after `timeout_seconds` (then killed), is an InputError blaming the file.
void in_child(const std::string& path, const std::string& doing, double timeout_seconds,
              const std::function<void()>& work) {
  if (timeout_seconds <= 0) {
    std::error_code ec;
    const auto bytes = fs::file_size(path, ec);
    timeout_seconds = 10 + (ec ? 0.0 : static_cast<double>(bytes) / 50e6);
  }
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw Error("checkpoint " + path + ": cannot start " + doing + " (pipe: " + std::strerror(errno) + ")");
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    throw Error("checkpoint " + path + ": cannot start " + doing + " (fork: " + std::strerror(errno) + ")");
  }
  if (child == 0) {
    // Only this thread exists here; nothing is flushed or destroyed on the way out (_exit).
    ::close(pipe_fds[0]);
    std::string message;
    int code = 0;
    try {
      work();
    } catch (const InputError& e) {
      message = e.what();
      code = kVerifyRefused;
    } catch (const std::exception& e) {
      message = e.what();
      code = kChildFailed;
    }
    for (std::size_t done = 0; done < message.size();) {
      const auto n = ::write(pipe_fds[1], message.data() + done, message.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    ::_exit(code);
  }
  ::close(pipe_fds[1]);
  std::string message;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd item{pipe_fds[0], POLLIN, 0};
    const int ready = left.count() > 0 ? ::poll(&item, 1, static_cast<int>(std::min<long long>(left.count(), 1000))) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      if (left.count() > 0) continue;
      timed_out = true;
      ::kill(child, SIGKILL);
      break;
    }
    char buffer[4096];
    const auto n = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    message.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    throw InputError("checkpoint " + path + ": " + doing + " took more than " + std::to_string(static_cast<int>(timeout_seconds)) +
                     " s (a damaged or forged file?)");
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  if (WIFEXITED(status) && WEXITSTATUS(status) == kVerifyRefused && !message.empty()) throw InputError(message);
  if (WIFEXITED(status) && WEXITSTATUS(status) == kChildFailed && !message.empty()) throw Error(message);
  throw InputError("checkpoint " + path + ": the HDF5 library crashed " + doing + " (" +
                   (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                        : "exit code " + std::to_string(WEXITSTATUS(status))) +
                   "): a damaged or forged file");
}

}  // namespace

void verify_checkpoint(const std::string& path, double timeout_seconds) {
  in_child(path, "reading it", timeout_seconds, [&] { read_checkpoint(path); });
}

void copy_checkpoint_as(const std::string& source, const std::string& target, std::int64_t trial,
                        std::uint64_t seed, const nlohmann::json& config) {
  in_child(source, "copying it", 0, [&] {
    auto checkpoint = read_checkpoint(source);
    checkpoint.trial = trial;
    checkpoint.seed = seed;
    checkpoint.config = config;
    write_checkpoint(target, checkpoint);
  });
}

}  // namespace packtune::actors
