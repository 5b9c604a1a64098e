#pragma once
// pack_bench's timing: a pack of K members stepped in rounds, fused on the project's executor
// or as plain LibTorch trials in turn, timed, and traced under the profiler; and the device's
// sgemm peak the rates are set against.
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "actors/pack_executor.hpp"
#include "bench/pack_bench/options.hpp"
#include "reference/reference_trainer.hpp"

namespace packtune::bench {

// Waits for the device's queued work, so that a clock read after it times the work.
void synchronize(torch::Device device);

// What one mode did: member-samples over wall seconds.
struct Rate {
  double samples = 0;
  double seconds = 0;
  double per_second() const { return seconds > 0 ? samples / seconds : 0; }
};

// Fused: a pack on the real executor, with budgets no run reaches so nothing is evaluated.
// Not fused: plain LibTorch trials stepping in turn, what a tuner without packing trains.
class BenchPack {
 public:
  BenchPack(const Options& o, const std::string& model, const std::vector<int>& members,
            torch::Device device, bool fuse);

  void rounds(int n);

  // Steps rounds for at least `seconds` (and two rounds), after `warmup` untimed rounds.
  Rate measure(double seconds, int warmup);

 private:
  void step_round();

  datasets::DataSplit split_;
  datasets::BatchStream stream_;
  actors::PackExecutor pack_;
  std::vector<std::unique_ptr<reference::ReferenceTrainer>> plain_;
  torch::Device device_;
  int batch_;
};

// `rounds` rounds of `pack` under the Kineto profiler: a Chrome trace in `path`, and the events
// of the device's kind that took the most time, summed by name, on stderr.
void trace_rounds(BenchPack& pack, int rounds, torch::Device device, const std::string& path);

// The sgemm peak of the whole device. On the CPU, OpenBLAS is held to one thread (as in
// every actor, see configure_cpu_threads), so the rows of C are split over LibTorch's
// threads, each one gemm: the same kind of parallelism the other modes can use.
double peak_flops(torch::Device device, double seconds);

}  // namespace packtune::bench
