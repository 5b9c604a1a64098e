// pack_bench: what packing buys. For K members of one architecture that differ in
// hyper-parameters, the member-samples per second of
//   fused       one PackExecutor with fuse on: the K members train as one FusedGroup
//   sequential  K plain LibTorch trials (reference::ReferenceTrainer: torch::nn modules and
//               torch::optim) step in turn in one process, sharing the batch stream
//   processes   K copies of this program (hidden --worker flag), one plain trial each, all
//               started together: what a tuner giving each trial a fraction of a device does
// and the share of the device's own sgemm peak each reaches. Figures are ratios taken in one
// run on a possibly busy machine; this program never fails a test on a figure.
//
// This file runs the modes for every model and K; pack_bench/ holds its parts: the options,
// the workload (members' specs and FLOPs), the timed pack, the processes mode and the report.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "actors/cuda_step.hpp"
#include "actors/device.hpp"
#include "bench/pack_bench/bench_pack.hpp"
#include "bench/pack_bench/options.hpp"
#include "bench/pack_bench/processes.hpp"
#include "bench/pack_bench/report.hpp"
#include "bench/pack_bench/workload.hpp"
#include "packtune/error.hpp"

namespace packtune::bench {
namespace {

// The pack sizes to measure on this device: a GPU gets the large packs the CPU cannot afford.
std::vector<int> pack_sizes(const Options& o, torch::Device device) {
  if (o.ks_given || o.smoke || !device.is_cuda()) return o.ks;
  if (o.quick) return {1, 32, 128};
  auto ks = o.ks;
  ks.push_back(64);
  ks.push_back(128);
  return ks;
}

int run(const Options& o) {
  const auto resolved = actors::resolve_device(o.device, 0);
  const torch::Device device(resolved);
  actors::make_current(device);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = o.threads > 0 ? o.threads : cores;
  actors::configure_cpu_threads(threads);
  const auto precision = use_precision(o, resolved);
  const bool cudnn_benchmark = actors::use_cudnn_benchmark(resolved);
  actors::keep_large_blocks_in_heap();
  const double timing = o.smoke ? 0.1 : o.quick ? 0.5 : 1.5;
  const double peak = peak_flops(device, timing);
  std::fprintf(stderr, "sgemm peak on %s: %.1f GFLOP/s\n", resolved.c_str(), peak / 1e9);
  const spec::InputShape input;
  std::vector<Row> rows;
  for (const auto& model : o.models) {
    for (int k : pack_sizes(o, device)) {
      Row r;
      r.model = model;
      r.k = k;
      r.flops_per_sample = train_flops_per_sample(member_spec(o, model, 0).model, input);
      // On a GPU past a fused group's eager warm-ups and its graph's capture: those are not the
      // steps a pack runs at.
      const int warmup = std::max(o.smoke || o.quick ? 1 : 2, device.is_cuda() ? actors::StepGraph::kWarmupSteps + 2 : 0);
      auto wanted = [&](const char* mode) { return std::count(o.modes.begin(), o.modes.end(), mode) > 0; };
      auto traced = [&](BenchPack& pack, const char* mode) {
        if (o.trace.empty()) return;
        std::filesystem::create_directories(o.trace);
        trace_rounds(pack, 10, device, o.trace + "/" + model + "-k" + std::to_string(k) + "-" + mode + ".json");
      };
      if (wanted("fused")) {
        BenchPack pack(o, model, member_ids(k), device, true);
        r.fused = pack.measure(o.seconds, warmup).per_second();
        traced(pack, "fused");
      }
      if (wanted("sequential")) {
        BenchPack pack(o, model, member_ids(k), device, false);
        r.sequential = pack.measure(o.seconds, warmup).per_second();
        traced(pack, "sequential");
        // Members in turn only parallelise inside each small operator; on a busy machine one
        // thread can be faster, and the fair baseline is the better of the two.
        if (device.is_cpu() && threads > 1 && !o.smoke) {
          actors::configure_cpu_threads(1);
          r.sequential_one_thread =
              BenchPack(o, model, member_ids(k), device, false).measure(o.seconds, warmup).per_second();
          actors::configure_cpu_threads(threads);
        }
      }
      // One thread each once K reaches the cores: more would only oversubscribe them.
      r.process_threads = device.is_cpu() ? std::max(1, threads / k) : 1;
      if (wanted("processes") && k <= o.max_processes) r.processes = measure_processes(o, model, k, r.process_threads).per_second();
      std::fprintf(stderr, "%s K=%d: fused %.0f, sequential %.0f, processes %.0f member-samples/s\n",
                   model.c_str(), k, r.fused, r.sequential, r.processes);
      rows.push_back(r);
    }
  }
  if (o.json) {
    auto list = nlohmann::json::array();
    for (const auto& r : rows) list.push_back(to_json(r, peak, threads, resolved, o.batch, precision, cudnn_benchmark));
    std::cout << list.dump(2) << std::endl;
  } else {
    print_table(rows, peak, threads, resolved, o, precision, cudnn_benchmark);
  }
  return 0;
}

}  // namespace
}  // namespace packtune::bench

int main(int argc, char** argv) {
  using namespace packtune;
  try {
    const auto options = bench::parse_options(argc, argv);
    if (options.help) {
      std::fputs(bench::kUsage, stdout);
      return 0;
    }
    return options.worker ? bench::run_worker(options) : bench::run(options);
  } catch (const InputError& e) {
    std::fprintf(stderr, "pack_bench: %s\n", e.what());
    return 2;
  } catch (const c10::Error& e) {
    std::fprintf(stderr, "pack_bench: %s\n", e.what_without_backtrace());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pack_bench: %s\n", e.what());
    return 1;
  }
}
