// pack_bench: what packing buys. For K members of one architecture that differ in
// hyper-parameters, the member-samples per second of
//   fused       one PackExecutor with fuse on: the K members train as one FusedGroup
//   sequential  K plain LibTorch trials (reference::ReferenceTrainer: torch::nn modules and
//               torch::optim) step in turn in one process, sharing the batch stream
//   processes   K copies of this program (hidden --worker flag), one plain trial each, all
//               started together: what a tuner giving each trial a fraction of a device does
// and the share of the device's own sgemm peak each reaches. Figures are ratios taken in one
// run on a possibly busy machine; this program never fails a test on a figure.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>
#include <torch/cuda.h>
#include <torch/torch.h>
#include <torch/version.h>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/autograd/profiler_kineto.h>
#endif

#include "actors/classifier.hpp"
#include "reference/classifier.hpp"
#include "reference/reference_trainer.hpp"
#include "actors/autocast.hpp"
#include "actors/cuda_step.hpp"
#include "actors/device.hpp"
#include "actors/memory_profile.hpp"
#include "actors/pack_executor.hpp"
#include "packtune/error.hpp"

extern char** environ;

namespace packtune::bench {
namespace {

using Clock = std::chrono::steady_clock;

class BenchError : public Error {
 public:
  using Error::Error;
};

const char* const kUsage = R"(usage: pack_bench [options]

Member-samples per second of K same-architecture trials trained as one fused pack, one
after another in one process, and as K processes at once; and the share of the device's
sgemm peak each reaches. Inputs are random 28x28x1 images with 10 classes (Fashion-MNIST's
shape); members differ in learning rate, momentum, weight decay and seed.

  --quick            K = 1, 16 (on a GPU 1, 32, 128) and 1 s timings (under 2 minutes on 2 cores)
  --smoke            K = 1, 2 and a few steps: checks that every mode runs (the ctest)
  --json             print a JSON list instead of the table (progress goes to stderr)
  --device D         cpu | cuda | cuda:N | auto (default auto)
  --threads N        CPU threads for the fused and sequential modes (default: all cores)
  --k LIST           comma-separated pack sizes (default 1,2,4,8,16,32; on a GPU also 64,128)
  --max-processes N  the processes mode runs only up to K = N (default 32): beyond, K
                     LibTorch processes (CUDA contexts on a GPU) exhaust memory; it reads 0
  --models LIST      comma-separated, from mlp,cnn,resnet (default mlp,cnn); resnet: 2 stages
                     of 1 basic block, 16 and 32 channels, batch norm
  --stages N, --blocks N
                     the resnet's stages and basic blocks per stage (default 2 and 1)
  PACKTUNE_CUDNN_BENCHMARK=1 in the environment turns cuDNN's benchmark mode on (GPUs)
  --trace DIR        after timing each model and K, 10 more rounds of each mode under LibTorch's
                     profiler (Kineto; LibTorch 2.x): DIR/MODEL-kK-MODE.json, a Chrome trace, and
                     on stderr the 12 kernels (on a CPU, operators) that took the most time.
                     PACKTUNE_CUDA_GRAPHS=0 shows a fused step's kernels one by one
  --modes LIST       comma-separated, from fused,sequential,processes (default all; a mode
                     left out reads 0)
  --seconds S        timed seconds per mode and K (default 3)
  --batch N          batch size of every member (default 128)
  --width N          hidden units of the MLP, fc units of the CNN (default 256)
  --optimizer NAME   sgd | adam | adamw (default sgd, with momentum)
  --precision P      auto | fp32 | tf32 | bf16, as the config's precision (default auto: tf32
                     on a GPU, fp32 on a CPU; bf16 on a CPU runs LibTorch's CPU autocast)
  --help             this text
)";

struct Options {
  std::vector<std::string> models{"mlp", "cnn"};
  std::vector<int> ks{1, 2, 4, 8, 16, 32};
  bool ks_given = false;
  int max_processes = 32;
  std::vector<std::string> modes{"fused", "sequential", "processes"};
  double seconds = 3.0;
  std::string device = "auto";
  int threads = 0;
  int batch = 128;
  int width = 256;
  std::string optimizer = "sgd";
  std::string precision = "auto";
  int stages = 2;  // resnet: 28x28 and 14x14
  int blocks = 1;
  std::string trace;  // --trace DIR
  bool json = false;
  bool quick = false;
  bool smoke = false;
  bool help = false;
  // --worker: one member of the processes mode, run by the parent.
  bool worker = false;
  std::string worker_model;
  int member = 0;
};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

int parse_int(const std::string& flag, const std::string& text, int low) {
  try {
    std::size_t used = 0;
    const int value = std::stoi(text, &used);
    if (used == text.size() && value >= low) return value;
  } catch (const std::exception&) {
  }
  throw InputError(flag + ": expected an integer >= " + std::to_string(low) + ", got \"" + text + "\"");
}

double parse_seconds(const std::string& text) {
  try {
    std::size_t used = 0;
    const double value = std::stod(text, &used);
    if (used == text.size() && value > 0) return value;
  } catch (const std::exception&) {
  }
  throw InputError("--seconds: expected a positive number, got \"" + text + "\"");
}

Options parse_options(int argc, char** argv) {
  Options o;
  bool seconds_given = false;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw InputError(a + ": expects a value; see --help");
      return args[++i];
    };
    if (a == "--help" || a == "-h") o.help = true;
    else if (a == "--quick") o.quick = true;
    else if (a == "--smoke") o.smoke = true;
    else if (a == "--json") o.json = true;
    else if (a == "--device") o.device = value();
    else if (a == "--threads") o.threads = parse_int(a, value(), 1);
    else if (a == "--batch") o.batch = parse_int(a, value(), 1);
    else if (a == "--max-processes") o.max_processes = parse_int(a, value(), 1);
    else if (a == "--width") o.width = parse_int(a, value(), 1);
    else if (a == "--optimizer") o.optimizer = value();
    else if (a == "--stages") o.stages = parse_int(a, value(), 1);
    else if (a == "--trace") {
      o.trace = value();
#if TORCH_VERSION_MAJOR < 2
      throw InputError("--trace: needs LibTorch 2.x (its Kineto profiler); this pack_bench has " TORCH_VERSION);
#endif
    }
    else if (a == "--blocks") o.blocks = parse_int(a, value(), 1);
    else if (a == "--precision") {
      o.precision = value();
      actors::parse_precision(o.precision, "--precision");
    }
    else if (a == "--seconds") { o.seconds = parse_seconds(value()); seconds_given = true; }
    else if (a == "--k") {
      o.ks.clear();
      for (const auto& k : split_list(value())) o.ks.push_back(parse_int("--k", k, 1));
      if (o.ks.empty()) throw InputError("--k: expected a list such as 1,4,16");
      o.ks_given = true;
    } else if (a == "--models") {
      o.models = split_list(value());
      for (const auto& m : o.models) {
        if (m != "mlp" && m != "cnn" && m != "resnet") {
          throw InputError("--models: unknown model \"" + m + "\"; expected mlp, cnn or resnet");
        }
      }
      if (o.models.empty()) throw InputError("--models: expected a list such as mlp,cnn");
    } else if (a == "--modes") {
      o.modes = split_list(value());
      for (const auto& m : o.modes) {
        if (m != "fused" && m != "sequential" && m != "processes") {
          throw InputError("--modes: unknown mode \"" + m + "\"; expected fused, sequential or processes");
        }
      }
    } else if (a == "--worker") {
      o.worker = true;
      o.worker_model = value();
    } else if (a == "--member") o.member = parse_int(a, value(), 0);
    else throw InputError("unknown option \"" + a + "\"; see --help");
  }
  if (o.optimizer != "sgd" && o.optimizer != "adam" && o.optimizer != "adamw") {
    throw InputError("--optimizer: expected sgd, adam or adamw, got \"" + o.optimizer + "\"");
  }
  actors::check_device_syntax(o.device);
  // Explicit --k and --seconds win over the presets.
  if (o.smoke) {
    if (!o.ks_given) o.ks = {1, 2};
    if (!seconds_given) o.seconds = 0.05;
  } else if (o.quick) {
    if (!o.ks_given) o.ks = {1, 16};
    if (!seconds_given) o.seconds = 1.0;
  }
  return o;
}

// The run's precision on `device`, as an actor sets it; bf16 is allowed on a CPU here (LibTorch's
// CPU autocast), which an actor refuses, so that its cost can be measured there too.
actors::Precision use_precision(const Options& o, const std::string& device) {
  const auto requested = actors::parse_precision(o.precision, "--precision");
  if (requested == actors::Precision::Bf16 && device == "cpu") {
    actors::set_training_precision(requested, /*on_cpu_too=*/true);
    return requested;
  }
  return actors::use_precision(requested, device);
}

actors::TrialSpec member_spec(const Options& o, const std::string& model, int member) {
  actors::TrialSpec spec;
  spec.model.family = model;
  spec.model.depth = 2;
  spec.model.width = o.width;
  spec.model.activation = "relu";
  spec.model.stages = o.stages;
  spec.model.blocks = o.blocks;
  spec.batch_size = o.batch;
  spec.optimizer.name = o.optimizer;
  // A spread a random search would draw; only the values differ, never the shapes.
  spec.optimizer.lr = (o.optimizer == "sgd" ? 0.003 : 0.0003) * std::pow(1.5, member % 8);
  spec.optimizer.momentum = member % 2 == 0 ? 0.9 : 0.5;
  spec.optimizer.weight_decay = member % 3 == 0 ? 1e-4 : 0.0;
  return spec;
}

// Multiply-adds counted twice, for the layers that do the arithmetic (Linear, Conv2d);
// activations, pooling, batch norm and the optimizer are left out, so shares are a lower
// bound of the work done.
double forward_flops_per_sample(const actors::ModelSpec& spec, const actors::InputShape& input) {
  // The ResNet's convolutions nest in residual blocks; model_shape counts them the same way.
  if (spec.family == "resnet") {
    return static_cast<double>(actors::model_shape(spec, input.channels, input.height, input.width, input.outputs)
                                   .flops_per_sample);
  }
  auto model = reference::build_classifier(spec, input);
  double flops = 0;
  std::int64_t h = input.height, w = input.width;
  for (const auto& child : model->children()) {
    if (auto* linear = child->as<torch::nn::Linear>()) {
      flops += 2.0 * static_cast<double>(linear->options.in_features() * linear->options.out_features());
    } else if (auto* conv = child->as<torch::nn::Conv2d>()) {
      const std::int64_t k = spec.kernel, pad = spec.kernel / 2;
      h = h + 2 * pad - k + 1;
      w = w + 2 * pad - k + 1;
      flops += 2.0 * static_cast<double>(conv->options.in_channels() * k * k *
                                         conv->options.out_channels() * h * w);
    } else if (child->as<torch::nn::MaxPool2d>()) {
      h /= 2;
      w /= 2;
    }
  }
  return flops;
}

// Backward computes a gradient for the inputs and one for the weights, each as costly as
// the forward product: training ~ 3x the forward FLOPs.
double train_flops_per_sample(const actors::ModelSpec& spec, const actors::InputShape& input) {
  return 3.0 * forward_flops_per_sample(spec, input);
}

void synchronize(torch::Device device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

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

  void rounds(int n) {
    for (int i = 0; i < n; ++i) step_round();
    synchronize(device_);
  }

  // Steps rounds for at least `seconds` (and two rounds), after `warmup` untimed rounds.
  Rate measure(double seconds, int warmup) {
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

 private:
  void step_round() {
    if (plain_.empty()) {
      pack_.step_round();
      return;
    }
    stream_.begin_round();
    // The plain models in the same precision as the fused pack (FusedGroup opens its own).
    actors::Autocast autocast(device_);
    for (auto& trainer : plain_) trainer->train_step(stream_);
  }

  datasets::DataSplit split_;
  datasets::BatchStream stream_;
  actors::PackExecutor pack_;
  std::vector<std::unique_ptr<reference::ReferenceTrainer>> plain_;
  torch::Device device_;
  int batch_;
};

// `rounds` rounds of `pack` under the Kineto profiler: a Chrome trace in `path`, and the events
// of the device's kind that took the most time, summed by name, on stderr.
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

std::vector<int> member_ids(int k) {
  std::vector<int> ids(static_cast<std::size_t>(k));
  for (int i = 0; i < k; ++i) ids[static_cast<std::size_t>(i)] = i;
  return ids;
}

// The sgemm peak of the whole device. On the CPU, OpenBLAS is held to one thread (as in
// every actor, see configure_cpu_threads), so the rows of C are split over LibTorch's
// threads, each one gemm: the same kind of parallelism the other modes can use.
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

// --- processes mode ---------------------------------------------------------------------

std::string self_path() {
  std::vector<char> buf(4096);
  const auto len = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (len <= 0) throw BenchError("cannot find this program's path in /proc/self/exe");
  return std::string(buf.data(), static_cast<std::size_t>(len));
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// One member alone: build, warm up, say "ready", wait for stdin to close (the parent's
// start signal, so that loading LibTorch is not timed), train for --seconds, report.
// steady_clock is CLOCK_MONOTONIC, one clock for every process of the machine.
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

// K workers started together; the aggregate is all their samples over the span from the
// first start to the last finish.
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

// --- the report -------------------------------------------------------------------------

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

// The pack sizes to measure on this device: a GPU gets the large packs the CPU cannot afford.
std::vector<int> pack_sizes(const Options& o, torch::Device device) {
  if (o.ks_given || o.smoke || !device.is_cuda()) return o.ks;
  if (o.quick) return {1, 32, 128};
  auto ks = o.ks;
  ks.push_back(64);
  ks.push_back(128);
  return ks;
}

std::string omp_wait_policy() {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  return policy ? policy : "unset";
}

nlohmann::json to_json(const Row& r, double peak, int threads, const std::string& device, int batch,
                       actors::Precision precision, bool cudnn_benchmark) {
  auto share = [&](double rate) { return peak > 0 ? rate * r.flops_per_sample / peak : 0.0; };
  return {{"model", r.model},
          {"k", r.k},
          {"batch", batch},
          {"device", device},
          {"precision", actors::to_string(precision)},
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
                 const Options& o, actors::Precision precision, bool cudnn_benchmark) {
  std::printf("device %s, %d thread(s) for fused and sequential; batch %d, width %d, %s, precision %s%s\n",
              device.c_str(), threads, o.batch, o.width, o.optimizer.c_str(), actors::to_string(precision).c_str(),
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
  const actors::InputShape input;
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
