#pragma once
// `packtune node --driver ENDPOINT`: one per machine. Registers the machine with the driver
// (NodeHello: cores, memory, GPUs, how many actors), starts its actors under an
// ActorSupervisor (one per GPU, or --actors CPU actors), tells the driver at once when an
// actor process exits (ActorExited) so its trials move on, and ends with the experiment.
//
// Exit codes: 0 after the driver's Shutdown; 1 when the driver refuses the node, goes silent,
// or every actor slot was given up; 128 + N on signal N (its actors are killed first).
#include <string>
#include <vector>

#include "protocol/protocol.hpp"

namespace packtune {

struct NodeOptions {
  std::string driver;              // the driver's ZeroMQ endpoint
  int actors = 1;                  // CPU actors, when no GPU is listed
  std::vector<std::string> gpus;   // one actor per entry, each seeing only that GPU
  int threads = 0;                 // per actor; 0: the cores divided among the actors
  std::string keys;                // CURVE keys (`packtune keys DIR`), for the node and its actors
  std::string log_dir;             // actor-I.log; empty: WORK_DIR/logs
  std::string work_dir;            // actors' local files in WORK_DIR/actor-I; empty: a fresh temp folder
  int max_restarts = 3;            // per actor slot
  double connect_timeout_seconds = 30;
  double driver_timeout_seconds = 60;  // driver silence that ends the node
  double shutdown_grace_seconds = 10;  // after Shutdown, before stragglers are killed
};

// The GPUs a node gives its actors: `--gpus 0,2` when given, else a non-empty
// CUDA_VISIBLE_DEVICES (`visible`, may be null), else none. Throws InputError for an empty
// or malformed list.
std::vector<std::string> node_gpus(const std::string& flag, const char* visible);

// The machine as the driver sees it: host, pid, cores, memory, and for each GPU its name and
// memory as nvidia-smi reports them (the entry itself and 0 when it cannot tell).
protocol::NodeHello describe_machine(const std::vector<std::string>& gpus, int actors);

// The same from nvidia-smi's rows as given ({index, uuid, name, MiB} each), so that a test
// does not depend on the GPUs of the machine it runs on. Throws InputError for a GPU the rows
// do not list, unless there are no rows at all.
protocol::NodeHello describe_machine(const std::vector<std::string>& gpus, int actors,
                                     const std::vector<std::vector<std::string>>& nvidia_smi_rows);

// Runs the node until the experiment ends; returns the exit code.
int run_node(const NodeOptions& options);

}  // namespace packtune
