#pragma once
// The run exported to the trackers as its reports arrive (the config's `export`, or `packtune
// run --mlflow/--tensorboard`): `python -m packtune.trackers live`, the follower of `packtune
// export DIR --follow`, in a child process. It starts before the driver, so that a tracker it
// cannot write to stops the run before anything trains, and at the end it exports the last
// reports and ends the trackers' runs before `packtune run` exits.
#include <memory>
#include <string>

#include "experiment/experiment_config.hpp"
#include "util/line_process.hpp"

namespace packtune::cli {

class LiveExport {
 public:
  // Starts the follower of `out_dir` when `config` exports, and waits until it says it can
  // write to its stores. Throws InputError (exit 2) where it refuses a store the config names
  // (a TensorBoard folder that holds another export), Error (exit 1) where it cannot start: no
  // Python, no MLflow or TensorBoard in it, a store that does not answer. A new run's `out_dir`
  // that holds results already gets no follower: the driver refuses it, and the follower would
  // export someone else's run.
  LiveExport(const ExperimentConfig& config, const std::string& out_dir, bool resume);
  // Ends a follower finish() did not: it exports what the folder holds and ends the trackers'
  // runs as stopped (the driver threw).
  ~LiveExport();
  LiveExport(const LiveExport&) = delete;
  LiveExport& operator=(const LiveExport&) = delete;

  // After the driver returned `code`: the follower exports what it lacks and ends the
  // trackers' runs, FINISHED where the journal says the experiment finished, else KILLED (a
  // --resume goes on in them), and prints what it exported. Returns `code`, or 1 where the run
  // succeeded and its export failed (said in one line).
  int finish(int code);

 private:
  std::unique_ptr<util::LineProcess> follower_;
  std::string out_dir_;
  std::string options_;  // "--mlflow", "--tensorboard" or both, for messages
};

}  // namespace packtune::cli
