#pragma once
// `packtune export DIR --mlflow [URI]` and `--tensorboard OUT`: the experiment written to a
// tracker by the tracker's own Python library, through the packtune Python package's
// `python -m packtune.trackers` (python/packtune/trackers/), so that no tracker's format is
// written by hand here.
#include <string>
#include <vector>

namespace packtune::cli {

// The Python that runs the exporters: $PACKTUNE_PYTHON, else the virtual environment
// scripts/setup.sh makes ($PACKTUNE_PYTHON_VENV, default ~/.cache/packtune/python-venv) where
// it exists, else python3 on PATH.
std::string tracker_python();

// The PYTHONPATH the exporters run with: this source tree's python/ first, then the user's.
std::string tracker_pythonpath();
// `program` where exec would find it (a name on PATH, or a path that is executable), or "".
std::string find_program(const std::string& program);

// Runs `PYTHON -m packtune.trackers TRACKER DIR ARGS...` with this source tree's python/ first
// on PYTHONPATH (so the exporter matches the binary), its output and errors the user's, and
// returns its exit status (128 + N when signal N ended it). Throws Error when it cannot start.
int run_tracker_export(const std::string& tracker, const std::string& dir, const std::vector<std::string>& args);

// `--mlflow [URI]`: boost takes the word after an option with an optional value as its value,
// so `packtune export --mlflow DIR` would lose DIR. Here the next word is joined to the option
// (`--mlflow=URI`) when the command line names DIR besides (as a word, or by
// `positional_option`, export's --dir or run's --resume), else the word (DIR) is moved before
// the option.
std::vector<std::string> join_optional_value(const std::vector<std::string>& args, const std::string& option,
                                             const std::vector<std::string>& options_with_values,
                                             const std::string& positional_option);

}  // namespace packtune::cli
