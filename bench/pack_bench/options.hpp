#pragma once
// pack_bench's command line: the models, pack sizes and modes to measure and how, the presets
// (--quick, --smoke), and the hidden options of a processes-mode worker.
#include <string>
#include <vector>

namespace packtune::bench {

// What --help prints: main prints it, parse_options only notes that it was asked for.
extern const char* const kUsage;

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

// Throws InputError on an option it cannot take.
Options parse_options(int argc, char** argv);

}  // namespace packtune::bench
