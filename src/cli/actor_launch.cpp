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

#include "experiment/trial_shape.hpp"
#include "node/actor_supervisor.hpp"
#include "packtune/error.hpp"
#include "spec/declared_families.hpp"
#include "spec/family_json.hpp"
#include "spec/trial_spec.hpp"
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

namespace {

// What a packtune-actor run for the driver said: its exit code (-1: no exit), the line of its
// output that starts with `prefix` (empty if none), and its error line, if any.
struct ActorAnswer {
  int status = 0;
  int code = -1;
  std::string line;
  std::string error;
};

// Runs `packtune-actor ARGS` in a process group of its own (whatever it starts must not outlive
// it) for at most `timeout` seconds. Throws Error when it cannot be started, or when it does not
// end in time (its group killed), saying "WHAT: no AWAITED within N s (...)HINT".
ActorAnswer ask_actor(const std::vector<std::string>& args, double timeout, const std::string& what,
                      const std::string& prefix, const std::string& awaited, const std::string& hint) {
  namespace fs = std::filesystem;
  // start_child_process sends both of the child's streams to one file.
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
  std::vector<std::string> command{executable};
  command.insert(command.end(), args.begin(), args.end());
  const int pid = util::start_child_process(command, {}, output, false, /*own_group=*/true);
  if (pid < 0) throw Error("cannot start " + executable + ": " + std::strerror(-pid));
  ActorAnswer answer;
  if (!exited_within(pid, timeout, answer.status)) {
    ::kill(-pid, SIGKILL);
    while (waitpid(pid, &answer.status, 0) < 0 && errno == EINTR) {
    }
    std::ostringstream seconds;
    seconds << timeout;
    throw Error(what + ": no " + awaited + " within " + seconds.str() + " s (" + kTimeoutVariable + ")" + (hint.empty() ? "; " : hint + " ") +
                executable + " " + args.front() + " was killed");
  }
  std::ifstream in(output);
  std::string line;
  const std::string error_prefix = "packtune: error: ";
  while (std::getline(in, line)) {
    if (line.rfind(prefix, 0) == 0) answer.line = line;
    if (auto at = line.find(error_prefix); at != std::string::npos) answer.error = line.substr(at + error_prefix.size());
  }
  answer.code = WIFEXITED(answer.status) ? WEXITSTATUS(answer.status) : -1;
  return answer;
}

// Why packtune-actor failed, after ": ", for a failure that is not bad input.
std::string failure_reason(const ActorAnswer& answer, const char* mismatch) {
  if (!answer.error.empty()) return ": " + answer.error;
  // A library linked against another LibTorch than the actor's crashes on load or first call.
  if (WIFSIGNALED(answer.status)) return std::string(": it died of ") + strsignal(WTERMSIG(answer.status)) + mismatch;
  if (answer.code == 127) return ": it cannot be started";
  return "";
}

}  // namespace

void declare_model_plugin(const std::string& path) {
  namespace fs = std::filesystem;
  const auto absolute = fs::absolute(path).lexically_normal().string();
  // The description is its line that starts with "{".
  const auto answer =
      ask_actor({"--describe-model-plugin", absolute}, model_plugin_timeout(), "model plugin " + absolute, "{",
                "description", "; does loading it block, in a static constructor say?");
  if (answer.code != 0 || answer.line.empty()) {
    if (answer.code == 2 && !answer.error.empty()) throw InputError(answer.error);
    throw Error("model plugin " + absolute + ": " + actor_executable() + " --describe-model-plugin failed" +
                failure_reason(answer, " (is the plugin built against the LibTorch packtune was built with?)"));
  }
  const auto& json_line = answer.line;
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

void check_torchscript_files(const std::vector<std::string>& paths, const spec::InputShape& input,
                             const std::vector<std::string>& attributes) {
  if (paths.empty()) return;
  std::vector<std::string> args{"--check-torchscript"};
  args.insert(args.end(), paths.begin(), paths.end());
  args.push_back("--input");
  args.push_back(input.images ? std::to_string(input.channels) + "," + std::to_string(input.height) + "," +
                                    std::to_string(input.width)
                              : std::to_string(input.width));
  args.push_back("--outputs");
  args.push_back(std::to_string(input.outputs));
  if (input.task == datasets::Task::Regression) args.push_back("--regression");
  if (!attributes.empty()) {
    args.push_back("--attribute");
    args.insert(args.end(), attributes.begin(), attributes.end());
  }
  const auto what = "model.path " + paths.front() + (paths.size() > 1 ? " and the others" : "");
  const auto answer = ask_actor(args, model_plugin_timeout(), what, "ok ", "answer", "");
  if (answer.code == 0) return;
  if (answer.code == 2 && !answer.error.empty()) throw InputError(answer.error);
  throw Error(what + ": " + actor_executable() + " --check-torchscript failed" +
              failure_reason(answer, " (in LibTorch, loading or running the module)"));
}

void check_torchscript_models(const ExperimentConfig& config) {
  const auto family = config.model.find("family");
  if (family == config.model.end() || family->second != tuners::ParamValue(std::string("torchscript"))) return;
  std::vector<std::string> paths, attributes;
  const auto add = [](std::vector<std::string>& list, const std::string& item) {
    if (std::find(list.begin(), list.end(), item) == list.end()) list.push_back(item);
  };
  // Every key that is no training key names an attribute of the modules, of the kind of each
  // value the config gives it ("model.rate=real").
  const auto& training = spec::training_hyperparameters();
  const auto attribute = [&](const std::string& at, const std::string& name, const tuners::ParamValue& value) {
    if (name == "family" || std::find(training.begin(), training.end(), name) != training.end()) return;
    if (name == "path") {
      if (const auto* path = std::get_if<std::string>(&value)) add(paths, *path);
      return;
    }
    add(attributes, at + "." + name + "=" + spec::attribute_kind(value));
  };
  for (const auto& [name, value] : config.model) attribute("model", name, value);
  for (const auto& p : config.space.params()) {
    using Kind = tuners::ParamSpec::Kind;
    if (p.kind == Kind::Choice) {
      for (const auto& value : p.values) attribute("space", p.name, value);
    } else {
      attribute("space", p.name, p.kind == Kind::RandInt ? tuners::ParamValue(std::int64_t{0}) : tuners::ParamValue(0.5));
    }
  }
  check_torchscript_files(paths, input_dims(config), attributes);
}

}  // namespace packtune::cli
