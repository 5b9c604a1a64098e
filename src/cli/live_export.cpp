#include "cli/live_export.hpp"

#include <filesystem>
#include <iostream>

#include "cli/tracker_export.hpp"
#include "experiment/results_writer.hpp"
#include "packtune/error.hpp"

namespace packtune::cli {
namespace {

// Python and MLflow take seconds to import on a busy machine, and an MLflow server that does
// not answer is retried for a minute or more before MLflow gives up.
constexpr double kStartSeconds = 300;
// The last reports, the artifacts and the end of every trial's run: one call each to a
// remote store.
constexpr double kFinishSeconds = 600;
// After its last answer the follower only exits.
constexpr double kExitSeconds = 30;

bool starts_with(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

}  // namespace

LiveExport::LiveExport(const ExperimentConfig& config, const std::string& out_dir, bool resume) : out_dir_(out_dir) {
  if (config.export_mlflow.empty() && config.export_tensorboard.empty()) return;
  // A new run into a folder it will refuse (check_fresh) exports nothing there.
  if (!resume && ResultsWriter::occupied_by(out_dir)) return;
  std::vector<std::string> args = {"-m", "packtune.trackers", "live", out_dir};
  if (!config.export_mlflow.empty()) {
    args.insert(args.end(), {"--mlflow", config.export_mlflow});
    options_ = "--mlflow";
  }
  if (!config.export_tensorboard.empty()) {
    args.insert(args.end(), {"--tensorboard", config.export_tensorboard});
    options_ += options_.empty() ? "--tensorboard" : " and --tensorboard";
  }
  const auto python = tracker_python();
  const auto program = find_program(python);
  if (program.empty()) {
    throw Error(options_ + ": cannot find " + python + " to export with; run scripts/setup.sh, or set "
                "PACKTUNE_PYTHON to a python that has MLflow and TensorBoard");
  }
  // Through env, so that PYTHONPATH is the exporter's alone, not the actors' too.
  std::vector<std::string> argv = {"/usr/bin/env"};
  if (const auto path = tracker_pythonpath(); !path.empty()) argv.push_back("PYTHONPATH=" + path);
  argv.push_back(program);
  argv.insert(argv.end(), args.begin(), args.end());
  follower_ = std::make_unique<util::LineProcess>(argv);
  const auto answer = follower_->ask("start", kStartSeconds);
  if (answer.outcome == util::LineProcess::Outcome::Answered && answer.line == "ready") return;
  const auto ended = follower_->finish(kExitSeconds);
  follower_.reset();
  if (answer.outcome == util::LineProcess::Outcome::Answered && starts_with(answer.line, "refused ")) {
    throw InputError(answer.line.substr(8));
  }
  if (answer.outcome == util::LineProcess::Outcome::Answered && starts_with(answer.line, "failed ")) {
    throw Error(answer.line.substr(7));
  }
  if (answer.outcome == util::LineProcess::Outcome::TimedOut) {
    throw Error(options_ + ": the exporter (" + program + " -m packtune.trackers) did not start within " +
                std::to_string(static_cast<int>(kStartSeconds)) + " s");
  }
  throw Error(options_ + ": the exporter (" + program + " -m packtune.trackers) " + ended +
              " before it started; is the packtune Python package there (run scripts/setup.sh)?");
}

LiveExport::~LiveExport() {
  if (!follower_) return;
  try {
    follower_->ask("finish", kFinishSeconds);
    follower_->finish(kExitSeconds);
  } catch (...) {  // a destructor that runs while an exception leaves: the run's error is the one to see
  }
}

int LiveExport::finish(int code) {
  if (!follower_) return code;
  const auto answer = follower_->ask("finish", kFinishSeconds);
  const auto ended = follower_->finish(kExitSeconds);
  follower_.reset();
  const bool answered = answer.outcome == util::LineProcess::Outcome::Answered;
  if (answered && starts_with(answer.line, "done ")) {
    std::cout << answer.line.substr(5) << std::endl;
    return code;
  }
  std::string why = answered && starts_with(answer.line, "failed ") ? answer.line.substr(7)
                    : answer.outcome == util::LineProcess::Outcome::TimedOut
                        ? options_ + ": the export did not end within " +
                              std::to_string(static_cast<int>(kFinishSeconds)) + " s"
                        : options_ + ": the exporter " + ended;
  std::cerr << "packtune: " << (code == 0 ? "error" : "warning") << ": " << why << "; `packtune export "
            << out_dir_ << " --mlflow/--tensorboard` adds what the stores lack" << std::endl;
  return code == 0 ? 1 : code;
}

}  // namespace packtune::cli
