// pack_bench's options parsed and checked, the presets applied, and the usage that names them.
#include "bench/pack_bench/options.hpp"

#include <exception>
#include <sstream>

#include <torch/version.h>

#include "packtune/error.hpp"
#include "spec/device_syntax.hpp"
#include "spec/optimizer_table.hpp"
#include "spec/precision.hpp"

namespace packtune::bench {

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
  PACKTUNE_CUDNN_BENCHMARK=0 in the environment turns cuDNN's benchmark mode off (GPUs; on by default)
  --trace DIR        after timing each model and K, 10 more rounds of each mode under LibTorch's
                     profiler (Kineto; LibTorch 2.x): DIR/MODEL-kK-MODE.json, a Chrome trace, and
                     on stderr the 12 kernels (on a CPU, operators) that took the most time.
                     PACKTUNE_CUDA_GRAPHS=0 shows a fused step's kernels one by one
  --modes LIST       comma-separated, from fused,sequential,processes (default all; a mode
                     left out reads 0)
  --seconds S        timed seconds per mode and K (default 3)
  --batch N          batch size of every member (default 128)
  --width N          hidden units of the MLP, fc units of the CNN (default 256)
  --optimizer NAME   sgd, adam, ... (docs/config.md#optimizers; default sgd, with momentum)
  --precision P      auto | fp32 | tf32 | bf16, as the config's precision (default auto: tf32
                     on a GPU, fp32 on a CPU; bf16 on a CPU runs LibTorch's CPU autocast)
  --help             this text
)";

namespace {

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

}  // namespace

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
      spec::parse_precision(o.precision, "--precision");
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
  spec::optimizer_row(o.optimizer, "--optimizer");
  spec::check_device_syntax(o.device);
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

}  // namespace packtune::bench
