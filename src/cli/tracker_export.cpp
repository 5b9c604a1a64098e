#include "cli/tracker_export.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "packtune/error.hpp"

namespace packtune::cli {
namespace {

namespace fs = std::filesystem;

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

bool is_option(const std::string& word) { return word.size() > 1 && word[0] == '-'; }

}  // namespace

std::string tracker_python() {
  if (auto python = environment("PACKTUNE_PYTHON"); !python.empty()) return python;
  auto venv = environment("PACKTUNE_PYTHON_VENV");
  if (venv.empty() && !environment("HOME").empty()) venv = environment("HOME") + "/.cache/packtune/python-venv";
  const auto in_venv = venv + "/bin/python";
  if (!venv.empty() && access(in_venv.c_str(), X_OK) == 0) return in_venv;
  return "python3";
}

std::string tracker_pythonpath() {
  // The package beside this binary's sources, not whichever one that Python may have
  // installed: the exporter and the binary are of one version.
  std::string path = PACKTUNE_PYTHON_PACKAGE_DIR;
  if (!fs::exists(fs::path(path) / "packtune" / "trackers" / "__main__.py")) path.clear();
  if (const auto old = environment("PYTHONPATH"); !old.empty()) path = path.empty() ? old : path + ":" + old;
  return path;
}

std::string find_program(const std::string& program) {
  if (program.find('/') != std::string::npos) return access(program.c_str(), X_OK) == 0 ? program : "";
  const auto path = environment("PATH");
  for (std::size_t start = 0; start <= path.size();) {
    const auto end = std::min(path.find(':', start), path.size());
    const auto candidate = (end > start ? path.substr(start, end - start) : std::string(".")) + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

int run_tracker_export(const std::string& tracker, const std::string& dir, const std::vector<std::string>& args) {
  const auto python = tracker_python();
  std::vector<std::string> argv = {python, "-m", "packtune.trackers", tracker, dir};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> pointers;
  for (auto& arg : argv) pointers.push_back(arg.data());
  pointers.push_back(nullptr);
  const auto path = tracker_pythonpath();
  const std::string message = "packtune: error: --" + tracker + ": cannot run " + python +
                              " (set PACKTUNE_PYTHON, or run scripts/setup.sh): ";
  const pid_t pid = fork();
  if (pid < 0) throw Error("--" + tracker + ": cannot start " + python + ": " + std::strerror(errno));
  if (pid == 0) {
    if (!path.empty()) setenv("PYTHONPATH", path.c_str(), 1);
    execvp(pointers[0], pointers.data());
    const std::string line = message + std::strerror(errno) + "\n";
    (void)!write(STDERR_FILENO, line.data(), line.size());
    _exit(1);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw Error("--" + tracker + ": waiting for " + python + ": " + std::strerror(errno));
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

std::vector<std::string> join_optional_value(const std::vector<std::string>& args, const std::string& option,
                                             const std::vector<std::string>& options_with_values,
                                             const std::string& positional_option) {
  const auto takes_value = [&](const std::string& word) {
    return std::find(options_with_values.begin(), options_with_values.end(), word) != options_with_values.end();
  };
  // Words that are neither options nor the values of options: DIR, and the optional value.
  int loose = 0;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (takes_value(args[i])) {
      if (args[i] == positional_option) ++loose;
      ++i;
    } else if (!is_option(args[i]) || args[i].rfind(positional_option + "=", 0) == 0) {
      ++loose;
    }
  }
  std::vector<std::string> out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (takes_value(args[i]) && i + 1 < args.size()) {
      out.push_back(args[i]);
      out.push_back(args[++i]);
    } else if (args[i] == option && i + 1 < args.size() && !is_option(args[i + 1])) {
      if (loose >= 2) {
        out.push_back(option + "=" + args[++i]);
      } else {  // the word is DIR: put before the option, which then has no word after it
        out.push_back(args[++i]);
        out.push_back(option);
      }
    } else {
      out.push_back(args[i]);
    }
  }
  return out;
}

}  // namespace packtune::cli
