#include "cli/actor_launch.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "node/actor_supervisor.hpp"
#include "packtune/error.hpp"
#include "spec/declared_families.hpp"
#include "spec/family_json.hpp"
#include "util/child_process.hpp"
#include "util/printable.hpp"
#include "util/work_folder.hpp"

namespace packtune::cli {
namespace {

constexpr const char* kTimeoutVariable = "PACKTUNE_MODEL_PLUGIN_TIMEOUT";
constexpr double kDefaultTimeoutSeconds = 60;

// How long a plugin's description may take: $PACKTUNE_MODEL_PLUGIN_TIMEOUT seconds, or 60.
double model_plugin_timeout() {
  const char* text = std::getenv(kTimeoutVariable);
  if (text == nullptr || *text == '\0') return kDefaultTimeoutSeconds;
  char* end = nullptr;
  errno = 0;
  const double seconds = std::strtod(text, &end);
  if (errno != 0 || end == text || *end != '\0' || !std::isfinite(seconds) || seconds <= 0) {
    throw InputError(std::string(kTimeoutVariable) + ": expected a number of seconds > 0, got \"" +
                     util::printable(text, 40) + "\"");
  }
  return seconds;
}

// Whether child `pid` exited within `seconds`; its status is then in `status`, reaped.
bool exited_within(int pid, double seconds, int& status) {
  using Clock = std::chrono::steady_clock;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  auto pause = std::chrono::milliseconds(1);
  while (true) {
    const int reaped = waitpid(pid, &status, WNOHANG);
    if (reaped == pid || (reaped < 0 && errno != EINTR)) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

}  // namespace

std::string actor_executable() {
  return (std::filesystem::path(self_executable()).parent_path() / "packtune-actor").string();
}

void exec_actor(const std::string& argv0, const std::vector<std::string>& args) {
  const auto path = actor_executable();
  std::string command = "actor";
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(argv0.c_str()));
  argv.push_back(command.data());
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(path.c_str(), argv.data());
  const int err = errno;
  throw Error("actor: cannot start " + path + ": " + std::strerror(err) +
              " (packtune-actor is built and installed beside packtune)");
}

void declare_model_plugin(const std::string& path) {
  namespace fs = std::filesystem;
  const auto absolute = fs::absolute(path).lexically_normal().string();
  // start_child_process sends both of the child's streams to one file: the description is its
  // line that starts with "{", an error the line exit_code_of printed.
  const fs::path folder = util::fresh_work_dir("describe");
  struct Remove {
    fs::path folder;
    ~Remove() {
      std::error_code ec;
      fs::remove_all(folder, ec);
    }
  } remove{folder};
  const auto output = (folder / "output").string();
  const auto executable = actor_executable();
  const double timeout = model_plugin_timeout();
  // In a process group of its own: a plugin that started processes of its own while it
  // loaded must not leave them behind when the group is killed.
  const int pid = util::start_child_process({executable, "--describe-model-plugin", absolute}, {}, output, false,
                                            /*own_group=*/true);
  if (pid < 0) throw Error("cannot start " + executable + ": " + std::strerror(-pid));
  int status = 0;
  if (!exited_within(pid, timeout, status)) {
    ::kill(-pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    std::ostringstream seconds;
    seconds << timeout;
    throw Error("model plugin " + absolute + ": no description within " + seconds.str() + " s (" +
                kTimeoutVariable + "); does loading it block, in a static constructor say? " + executable +
                " --describe-model-plugin was killed");
  }
  std::ifstream in(output);
  std::string line, json_line, error_line;
  const std::string prefix = "packtune: error: ";
  while (std::getline(in, line)) {
    if (line.rfind("{", 0) == 0) json_line = line;
    if (auto at = line.find(prefix); at != std::string::npos) error_line = line.substr(at + prefix.size());
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code != 0 || json_line.empty()) {
    if (code == 2 && !error_line.empty()) throw InputError(error_line);
    std::string why;
    if (!error_line.empty()) {
      why = ": " + error_line;
    } else if (WIFSIGNALED(status)) {
      // A plugin linked against another LibTorch than the actor's crashes on load or first call.
      why = std::string(": it died of ") + strsignal(WTERMSIG(status)) +
            " (is the plugin built against the LibTorch packtune was built with?)";
    } else if (code == 127) {
      why = ": it cannot be started";
    }
    throw Error("model plugin " + absolute + ": " + executable + " --describe-model-plugin failed" + why);
  }
  nlohmann::json description;
  try {
    description = nlohmann::json::parse(json_line);
  } catch (const nlohmann::json::exception& e) {
    throw Error("model plugin " + absolute + ": its description is not JSON: " + e.what());
  }
  for (const auto& family : spec::families_from_json(description, "model plugin " + absolute)) {
    spec::DeclaredFamilies::instance().add(family);
  }
}

}  // namespace packtune::cli
