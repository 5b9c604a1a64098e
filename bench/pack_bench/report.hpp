#pragma once
// pack_bench's output: a row of figures per model and K, printed as a table or as JSON (whose
// keys bench/gpu_figures.sh reads).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/pack_bench/options.hpp"
#include "spec/precision.hpp"

namespace packtune::bench {

struct Row {
  std::string model;
  int k = 0;
  double fused = 0, sequential = 0, processes = 0;  // member-samples/s
  double sequential_one_thread = 0;                  // the same with one CPU thread (0: not run)
  double flops_per_sample = 0;                       // training, see train_flops_per_sample
  int process_threads = 1;

  // Seconds per round, every member stepping once: for the fused mode one fused step. The
  // rates are K x batch samples per round, so this is exact for the in-process modes; for
  // the processes mode it is the aggregate's, K member steps of time shared by K processes.
  double round_seconds(double rate, int batch) const {
    return rate > 0 ? static_cast<double>(k) * batch / rate : 0.0;
  }
};

// One --json object: the row's rates, with the run's settings, FLOPs and shares of `peak`.
nlohmann::json to_json(const Row& r, double peak, int threads, const std::string& device, int batch,
                       spec::Precision precision, bool cudnn_benchmark);

// The table printed without --json, with a header that says what the run was.
void print_table(const std::vector<Row>& rows, double peak, int threads, const std::string& device,
                 const Options& o, spec::Precision precision, bool cudnn_benchmark);

}  // namespace packtune::bench
