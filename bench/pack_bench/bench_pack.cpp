// pack_bench's timed rounds, its profiler traces and the sgemm peak: every clock it reads
// is read after the device's queue has drained.
#include "bench/pack_bench/bench_pack.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

#include <ATen/Parallel.h>
#include <torch/cuda.h>
#include <torch/version.h>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/autograd/profiler_kineto.h>
#endif

#include "actors/autocast.hpp"
#include "actors/memory_profile.hpp"
#include "bench/pack_bench/workload.hpp"

namespace packtune::bench {
using Clock = std::chrono::steady_clock;

void synchronize(torch::Device device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

BenchPack::BenchPack(const Options& o, const std::string& model, const std::vector<int>& members,
                     torch::Device device, bool fuse)
    : split_(actors::synthetic_split({1, 28, 28, 10}, static_cast<std::uint32_t>(std::max(8 * o.batch, 4096)), 16)),
      stream_(split_, device, 7),
      pack_(stream_, actors::BudgetUnit::Steps, true),
      device_(device),
      batch_(o.batch) {
  for (int m : members) {
    const auto spec = member_spec(o, model, m);
    const auto seed = 1000 + static_cast<std::uint64_t>(m);
    if (!fuse) {
      plain_.push_back(std::make_unique<reference::ReferenceTrainer>(m, spec, seed, stream_));
      continue;
    }
    actors::PackJob job;
    job.trial = m;
    job.spec = spec;
    job.seed = seed;
    job.budget = 1e12;
    pack_.add(job);
  }
}

void BenchPack::rounds(int n) {
  for (int i = 0; i < n; ++i) step_round();
  synchronize(device_);
}

Rate BenchPack::measure(double seconds, int warmup) {
  rounds(warmup);
  const auto start = Clock::now();
  Rate r;
  int n = 0;
  do {
    step_round();
    ++n;
    if (device_.is_cuda() && n % 8 != 0) continue;  // let the GPU queue fill between syncs
    synchronize(device_);
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  } while (r.seconds < seconds || n < 2);
  synchronize(device_);
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  r.samples = static_cast<double>(n) * static_cast<double>(pack_.size() + plain_.size()) * batch_;
  return r;
}

void BenchPack::step_round() {
  if (plain_.empty()) {
    pack_.step_round();
    return;
  }
  stream_.begin_round();
  // The plain models in the same precision as the fused pack (FusedGroup opens its own).
  actors::Autocast autocast(device_);
  for (auto& trainer : plain_) trainer->train_step(stream_);
}

void trace_rounds(BenchPack& pack, int rounds, torch::Device device, const std::string& path) {
#if TORCH_VERSION_MAJOR >= 2
  namespace profiler = torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  const torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO);
  std::set<ActivityType> activities{ActivityType::CPU};
  if (device.is_cuda()) activities.insert(ActivityType::CUDA);
  profiler::prepareProfiler(config, activities);
  profiler::enableProfiler(config, activities);
  pack.rounds(rounds);
  const auto result = profiler::disableProfiler();
  result->save(path);
  std::map<std::string, std::pair<double, int>> by_name;  // microseconds, calls
  double total = 0;
  for (const auto& e : result->events()) {
    if (e.deviceType() != device.type()) continue;
    auto& [micros, calls] = by_name[e.name()];
    micros += static_cast<double>(e.durationNs()) / 1e3;
    ++calls;
    total += static_cast<double>(e.durationNs()) / 1e3;
  }
  std::vector<std::pair<std::string, std::pair<double, int>>> sorted(by_name.begin(), by_name.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  std::fprintf(stderr, "trace %s: %d rounds, %.0f us of %s events a round (operators nest on a CPU)\n", path.c_str(),
               rounds, total / rounds, device.is_cuda() ? "kernel" : "operator");
  for (std::size_t i = 0; i < sorted.size() && i < 12; ++i) {
    const auto& [name, figures] = sorted[i];
    std::fprintf(stderr, "  %9.1f us/round %6.1f calls/round  %.110s\n", figures.first / rounds,
                 static_cast<double>(figures.second) / rounds, name.c_str());
  }
#else
  (void)pack, (void)rounds, (void)device, (void)path;
#endif
}

double peak_flops(torch::Device device, double seconds) {
  const std::int64_t n = device.is_cuda() ? 4096 : 1024;
  auto opts = torch::TensorOptions().device(device);
  auto a = torch::randn({n, n}, opts), b = torch::randn({n, n}, opts), c = torch::empty({n, n}, opts);
  auto product = [&] {
    if (device.is_cuda()) {
      torch::mm_out(c, a, b);
      return;
    }
    const std::int64_t rows = n / std::max(1, at::get_num_threads());
    at::parallel_for(0, n, rows, [&](std::int64_t begin, std::int64_t end) {
      auto out = c.narrow(0, begin, end - begin);
      torch::mm_out(out, a.narrow(0, begin, end - begin), b);
    });
  };
  product();
  synchronize(device);
  int reps = 0;
  const auto start = Clock::now();
  double elapsed = 0;
  do {
    product();
    ++reps;
    synchronize(device);
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  } while (elapsed < seconds);
  return 2.0 * static_cast<double>(n * n * n) * reps / elapsed;
}

}  // namespace packtune::bench
