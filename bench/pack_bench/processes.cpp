// The processes mode's two sides: the parent that spawns K workers, starts them at once and
// sums what they report, and the worker that trains one member and reports on stdout.
#include "bench/pack_bench/processes.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "actors/cuda_step.hpp"
#include "actors/device.hpp"
#include "bench/pack_bench/workload.hpp"
#include "packtune/error.hpp"

extern char** environ;

namespace packtune::bench {
namespace {

using Clock = std::chrono::steady_clock;

class BenchError : public Error {
 public:
  using Error::Error;
};

std::string self_path() {
  std::vector<char> buf(4096);
  const auto len = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (len <= 0) throw BenchError("cannot find this program's path in /proc/self/exe");
  return std::string(buf.data(), static_cast<std::size_t>(len));
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

struct Worker {
  pid_t pid = -1;
  FILE* out = nullptr;
};

std::string read_line(FILE* f) {
  std::string line;
  for (int c = std::fgetc(f); c != EOF && c != '\n'; c = std::fgetc(f)) line.push_back(static_cast<char>(c));
  return line;
}

class PipeFds {
 public:
  PipeFds() {
    if (pipe2(fds_, O_CLOEXEC) != 0) throw BenchError("pipe2 failed; too many open files?");
  }
  ~PipeFds() {
    close_read();
    close_write();
  }
  PipeFds(const PipeFds&) = delete;
  PipeFds& operator=(const PipeFds&) = delete;
  int read_end() const { return fds_[0]; }
  int write_end() const { return fds_[1]; }
  void close_read() { if (fds_[0] >= 0) close(fds_[0]); fds_[0] = -1; }
  void close_write() { if (fds_[1] >= 0) close(fds_[1]); fds_[1] = -1; }
  int release_read() { const int fd = fds_[0]; fds_[0] = -1; return fd; }

 private:
  int fds_[2] = {-1, -1};
};

}  // namespace

Rate measure_processes(const Options& o, const std::string& model, int k, int threads_each) {
  const auto exe = self_path();
  PipeFds go;
  std::vector<Worker> workers;
  auto reap = [&workers](bool kill_them) {
    for (auto& w : workers) {
      if (kill_them && w.pid > 0) kill(w.pid, SIGTERM);
      int status = 0;
      if (w.pid > 0) waitpid(w.pid, &status, 0);
      if (w.out) std::fclose(w.out);
      w = Worker{};
    }
  };
  try {
    for (int m = 0; m < k; ++m) {
      PipeFds result;
      posix_spawn_file_actions_t actions;
      posix_spawn_file_actions_init(&actions);
      posix_spawn_file_actions_adddup2(&actions, go.read_end(), 0);
      posix_spawn_file_actions_adddup2(&actions, result.write_end(), 1);
      std::vector<std::string> args{exe, "--worker", model, "--member", std::to_string(m),
                                    "--device", o.device, "--threads", std::to_string(threads_each),
                                    "--seconds", std::to_string(o.seconds), "--batch", std::to_string(o.batch),
                                    "--width", std::to_string(o.width), "--optimizer", o.optimizer,
                                    "--precision", o.precision, "--stages", std::to_string(o.stages),
                                    "--blocks", std::to_string(o.blocks)};
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      Worker w;
      const int rc = posix_spawn(&w.pid, exe.c_str(), &actions, nullptr, argv.data(), environ);
      posix_spawn_file_actions_destroy(&actions);
      if (rc != 0) throw BenchError("cannot start worker process " + std::to_string(m) + ": " + std::strerror(rc));
      result.close_write();
      w.out = fdopen(result.release_read(), "r");
      workers.push_back(w);
    }
    go.close_read();
    for (std::size_t m = 0; m < workers.size(); ++m) {
      if (read_line(workers[m].out) != "ready") {
        throw BenchError("worker " + std::to_string(m) + " failed before training; its stderr is above");
      }
    }
    go.close_write();  // every worker sees end of input at once
    Rate total;
    std::int64_t first = 0, last = 0;
    for (std::size_t m = 0; m < workers.size(); ++m) {
      double samples = 0;
      long long start = 0, end = 0;
      const auto line = read_line(workers[m].out);
      if (std::sscanf(line.c_str(), "result %lf %lld %lld", &samples, &start, &end) != 3) {
        throw BenchError("worker " + std::to_string(m) + " failed while training; its stderr is above");
      }
      total.samples += samples;
      first = m == 0 ? start : std::min<std::int64_t>(first, start);
      last = m == 0 ? end : std::max<std::int64_t>(last, end);
    }
    total.seconds = static_cast<double>(last - first) / 1e9;
    reap(false);
    return total;
  } catch (...) {
    reap(true);
    throw;
  }
}

int run_worker(const Options& o) {
  const torch::Device device(actors::resolve_device(o.device, o.member));
  actors::make_current(device);
  if (device.is_cpu()) actors::configure_cpu_threads(std::max(1, o.threads));
  use_precision(o, device.str());
  actors::use_cudnn_benchmark(device.str());
  actors::keep_large_blocks_in_heap();
  BenchPack pack(o, o.worker_model, {o.member}, device, false);
  pack.rounds(2);
  std::printf("ready\n");
  std::fflush(stdout);
  char c;
  while (read(0, &c, 1) > 0) {
  }
  const auto start = now_ns();
  const auto rate = pack.measure(o.seconds, 0);
  std::printf("result %.0f %lld %lld\n", rate.samples, static_cast<long long>(start),
              static_cast<long long>(now_ns()));
  std::fflush(stdout);
  return 0;
}

}  // namespace packtune::bench
