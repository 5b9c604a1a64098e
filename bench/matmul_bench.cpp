// The CPU's float32 matmul throughput through LibTorch, and which BLAS library served it.
// Run it with and without OpenBLAS to see what scripts/setup.sh's libopenblas0-pthread buys:
//   build/bench/matmul_bench
//   LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas build/bench/matmul_bench   (reference BLAS)
#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include <torch/torch.h>

namespace {

std::set<std::string> loaded_blas() {
  std::set<std::string> out;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const auto path = line.substr(slash);
    if (path.find("blas") != std::string::npos) out.insert(path);
  }
  return out;
}

double gflops(int n, int threads) {
  torch::set_num_threads(threads);
  auto a = torch::randn({n, n});
  auto b = torch::randn({n, n});
  auto c = torch::mm(a, b);  // warm-up
  int reps = 0;
  const auto start = std::chrono::steady_clock::now();
  double seconds = 0;
  while (seconds < 1.0) {
    c = torch::mm(a, b);
    ++reps;
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return 2.0 * n * n * n * reps / seconds / 1e9;
}

}  // namespace

int main() {
  for (const auto& lib : loaded_blas()) std::printf("loaded: %s\n", lib.c_str());
  for (int threads : {1, 2}) {
    for (int n : {256, 1024}) {
      std::printf("{\"n\": %d, \"threads\": %d, \"gflops\": %.2f}\n", n, threads, gflops(n, threads));
    }
  }
}
