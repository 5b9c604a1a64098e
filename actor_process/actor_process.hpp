#pragma once
// `packtune actor`: connects to a driver, takes trials and trains them as one pack.
#include <string>
#include <vector>

namespace packtune::actor_process {

struct ActorOptions {
  std::string driver;     // ZeroMQ endpoint of the driver
  int node_id = -1;       // the node that started it (0: the driver); -1: started by hand
  int local_index = -1;   // its slot on that node
  int threads = 0;        // CPU threads for training; 0 = all cores
  double connect_timeout_seconds = 30;
  // Driver silence that ends the actor; 0: 30 of the driver's heartbeats, at least 30 s.
  double driver_timeout_seconds = 0;
  std::string keys;       // CURVE keys (`packtune keys DIR`) for a driver that requires them
  // Where the actor keeps its own files (checkpoints on their way to or from a driver whose
  // file system it does not share); empty: a fresh folder under the system's temp folder.
  std::string work_dir;
};

// Returns the process exit code.
int run_actor(const ActorOptions& options);

// `packtune-actor --describe-model-plugin PATH`: loads the plugin and prints its families'
// declarations as one line of JSON on stdout, what the driver reads without loading LibTorch.
// Here, not in actor_main.cpp, which must not see LibTorch's headers: spdlog there does not
// compile beside LibTorch 2.x's fmt. Throws InputError as load_model_plugin does.
void describe_model_plugin(const std::string& path);

// `packtune-actor --check-torchscript PATH...`: loads each TorchScript file and checks it
// against the data (`input`: "C,H,W" images or "D" features; `outputs`: classes or regression
// targets) and the attributes the config sets (`attributes`: "model.rate=real", ...), printing
// "ok PATH" for each. Throws InputError, one line, for the first bad one
// (actors/torchscript_file.hpp): the driver's refusal before any actor trains.
void check_torchscript_files(const std::vector<std::string>& paths, const std::string& input, int outputs,
                             bool regression, const std::vector<std::string>& attributes);

}  // namespace packtune::actor_process
