// pack_bench's rows turned into JSON or a table, with the peak shares and ratios computed here.
#include "bench/pack_bench/report.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace packtune::bench {
namespace {

std::string omp_wait_policy() {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  return policy ? policy : "unset";
}

}  // namespace

nlohmann::json to_json(const Row& r, double peak, int threads, const std::string& device, int batch,
                       spec::Precision precision, bool cudnn_benchmark) {
  auto share = [&](double rate) { return peak > 0 ? rate * r.flops_per_sample / peak : 0.0; };
  return {{"model", r.model},
          {"k", r.k},
          {"batch", batch},
          {"device", device},
          {"precision", spec::to_string(precision)},
          {"cudnn_benchmark", cudnn_benchmark},
          {"threads", threads},
          {"process_threads", r.process_threads},
          {"fused", r.fused},
          {"sequential", r.sequential},
          {"sequential_one_thread", r.sequential_one_thread},
          {"processes", r.processes},
          {"fused_step_s", r.round_seconds(r.fused, batch)},
          {"sequential_round_s", r.round_seconds(r.sequential, batch)},
          {"sequential_one_thread_round_s", r.round_seconds(r.sequential_one_thread, batch)},
          {"processes_round_s", r.round_seconds(r.processes, batch)},
          {"fused_over_sequential", r.sequential > 0 ? r.fused / r.sequential : 0.0},
          {"fused_over_processes", r.processes > 0 ? r.fused / r.processes : 0.0},
          {"fused_over_best_sequential", r.fused / std::max({r.sequential, r.sequential_one_thread, 1e-9})},
          {"omp_wait_policy", omp_wait_policy()},
          {"train_flops_per_sample", r.flops_per_sample},
          {"peak_flops", peak},
          {"fused_flops", r.fused * r.flops_per_sample},
          {"sequential_flops", r.sequential * r.flops_per_sample},
          {"processes_flops", r.processes * r.flops_per_sample},
          {"fused_peak_share", share(r.fused)},
          {"sequential_peak_share", share(r.sequential)},
          {"processes_peak_share", share(r.processes)}};
}

void print_table(const std::vector<Row>& rows, double peak, int threads, const std::string& device,
                 const Options& o, spec::Precision precision, bool cudnn_benchmark) {
  std::printf("device %s, %d thread(s) for fused and sequential; batch %d, width %d, %s, precision %s%s\n",
              device.c_str(), threads, o.batch, o.width, o.optimizer.c_str(), spec::to_string(precision).c_str(),
              cudnn_benchmark ? ", cuDNN benchmark mode" : "");
  std::printf("sgemm peak: %.1f GFLOP/s; member-samples/s, and %% of the peak in brackets\n\n", peak / 1e9);
  std::printf("%-5s %4s %17s %17s %17s %17s %9s %9s %5s %10s\n", "model", "K", "fused", "sequential",
              "seq. 1 thread", "processes", "fused/seq", "fused/proc", "p.thr", "step ms");
  for (const auto& r : rows) {
    auto cell = [&](double rate) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%9.0f (%4.1f%%)", rate, peak > 0 ? 100 * rate * r.flops_per_sample / peak : 0.0);
      return std::string(buf);
    };
    const double best_sequential = std::max(r.sequential, r.sequential_one_thread);
    std::printf("%-5s %4d %17s %17s %17s %17s %8.2fx %9.2fx %5d %10.3f\n", r.model.c_str(), r.k,
                cell(r.fused).c_str(), cell(r.sequential).c_str(), cell(r.sequential_one_thread).c_str(),
                cell(r.processes).c_str(), best_sequential > 0 ? r.fused / best_sequential : 0.0,
                r.processes > 0 ? r.fused / r.processes : 0.0, r.process_threads,
                1e3 * r.round_seconds(r.fused, o.batch));
  }
  std::printf("\nfused/seq is over the better of the two sequential columns; p.thr: threads per process;\n"
              "step ms: one fused step of all K members; a processes cell of 0 was not run (K > --max-processes).\n");
  std::printf("training FLOPs per sample = 3 x forward Linear/Conv2d multiply-adds x 2; OMP_WAIT_POLICY %s\n",
              omp_wait_policy().c_str());
}

}  // namespace packtune::bench
