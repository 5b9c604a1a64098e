#include "experiment/experiment_config.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "experiment/trial_shape.hpp"
#include "packtune/error.hpp"
#include "spec/device_syntax.hpp"
#include "spec/precision.hpp"
#include "spec/trial_spec.hpp"
#include "tuners/tuner_registry.hpp"

namespace packtune {

using nlohmann::json;

namespace {

// One object or array the parser is in, for the dotted name of a key given twice.
struct OpenValue {
  std::string where;  // "budget", or "" at the top
  bool object = false;
  std::set<std::string> keys;
  std::string key;  // the object's key whose value is being read
};

std::string dotted(const std::string& where, const std::string& key) { return where.empty() ? key : where + "." + key; }

json parse_json(const std::string& text, const std::string& path) {
  // nlohmann::json keeps the last of two equal keys: a config that gives one twice would run
  // with a value its author may not have meant, so it is refused, at any depth.
  std::vector<OpenValue> open;
  const json::parser_callback_t refuse_twice = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start: {
        OpenValue v;
        if (!open.empty()) v.where = open.back().object ? dotted(open.back().where, open.back().key) : open.back().where;
        v.object = event == json::parse_event_t::object_start;
        open.push_back(std::move(v));
        break;
      }
      case json::parse_event_t::key: {
        auto& object = open.back();
        object.key = parsed.get<std::string>();
        if (!object.keys.insert(object.key).second) {
          throw InputError(dotted(object.where, object.key) + ": given twice in " + path +
                           "; JSON would keep only the last value, so give it once");
        }
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        open.pop_back();
        break;
      case json::parse_event_t::value:
        break;
    }
    return true;
  };
  try {
    return json::parse(text, refuse_twice);
  } catch (const json::exception& e) {
    // Not only parse_error: a number too large for a double ("1e400") is an out_of_range.
    throw InputError(path + ": not valid JSON (" + std::string(e.what()) + ")");
  }
}

json read_json_file(const std::string& path) {
  if (std::filesystem::is_directory(path)) throw InputError(path + ": a folder, not a config file");
  if (!std::filesystem::is_regular_file(path)) {
    throw InputError(path + ": config file not found");
  }
  std::ifstream in(path, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return parse_json(text, path);
}

// Whether a process accepts connections on the unix socket at `path`: the socket of a driver
// that runs. One left by a driver that was killed refuses them.
bool someone_listens_at(const std::string& path) {
  sockaddr_un address{};
  if (path.size() >= sizeof address.sun_path) return false;  // too long to bind: ZeroMQ says so
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const bool listens = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0 ||
                       (errno != ECONNREFUSED && errno != ENOENT);
  ::close(fd);
  return listens;
}

// ZeroMQ deletes whatever is at an ipc endpoint's path before it binds there: a file there
// that is not a socket is the user's, and a socket someone listens on is another driver's,
// whose actors would then reach this one. A socket nobody listens on is one a killed driver
// left, replaced as before.
void check_ipc_path(const std::string& listen) {
  const std::string path = listen.substr(std::strlen("ipc://"));
  // * : ZeroMQ picks a new file; @name: Linux's abstract namespace, no file at all.
  if (path.empty() || path == "*" || path[0] == '@') return;
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;  // nothing there (or not ours to see: bind says so)
  if (!S_ISSOCK(st.st_mode)) {
    throw InputError("listen: " + path + " exists and is not a socket; binding there would delete it: name a path "
                     "where nothing is");
  }
  if (someone_listens_at(path)) {
    throw InputError("listen: " + path + " is the socket of a running process (another packtune driver?); binding "
                     "there would take it over: name another path, or stop that process");
  }
}

}  // namespace

ExperimentConfig load_config(const std::string& path) { return parse_config(read_json_file(path), path); }

ExperimentConfig load_config_keys(const std::string& path, const std::vector<std::string>& only) {
  return parse_config_keys(read_json_file(path), path, only);
}

ExperimentConfig parse_config_text(const std::string& text, const std::string& path) {
  return parse_config(parse_json(text, path), path);
}

tuners::TunerContext tuner_context(const ExperimentConfig& c) {
  tuners::TunerContext t;
  t.space = c.space;
  t.metric = c.metric;
  t.mode = c.mode;
  t.min_budget = c.min_budget;
  t.max_budget = c.max_budget;
  t.max_trials = trial_limit(c);
  t.seed = c.seed;
  t.settings = c.tuner_settings;
  t.budget_unit = c.budget_unit;
  // In epochs a step's budget depends on the data: validate() builds the tuner with it again.
  if (c.budget_unit == "steps") t.step_budget = 1;
  return t;
}

std::int64_t trial_limit(const ExperimentConfig& c) {
  if (c.trials >= 0) return c.trials;
  return c.tuner == "hyperband" || c.tuner == "sha" || c.tuner == "grid" || c.tuner == "pbt" ? 0 : 10;
}

namespace {

std::string mib(std::uint64_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

// Each local actor holds its own copy of the data set (datasets::actor_data_bytes) in this
// machine's memory before it trains anything: more than the machine has would end in the
// kernel's out-of-memory killer, not a message. Actors elsewhere load it where they run;
// one that runs out says so (datasets::load_split).
void check_data_fits(const ExperimentConfig& c, const datasets::DataShape& shape) {
  if (c.actors <= 0) return;
  const auto available = available_memory_bytes();
  const auto each = datasets::actor_data_bytes(c.data, shape);
  const auto all = each * static_cast<std::uint64_t>(c.actors);
  if (available > 0 && all > static_cast<std::uint64_t>(available)) {
    const auto files = datasets::data_files(c.data);
    throw InputError("data: " + files.front() + ": the data set takes " + mib(each) + " in each actor's memory, " +
                     std::to_string(c.actors) + " local actor(s) " + mib(all) + ", more than the " +
                     mib(static_cast<std::uint64_t>(available)) + " available on this machine; use data.train_size, "
                     "fewer actors or a smaller data set");
  }
}

// A model has a dropout layer only where its dropout is above 0 (actors/classifier.cpp): a
// perturbed dropout that reached 0, or left it, would change the layers a checkpoint holds.
// A trial's training recipe against the experiment: smoothing needs classes, and a warmup
// longer than budget.max would never reach the base rate.
void check_recipe(const spec::TrialSpec& spec, const ExperimentConfig& c, const std::string& where) {
  if (spec.label_smoothing > 0 && c.data.task == datasets::Task::Regression) {
    throw InputError(where + ".label_smoothing: label smoothing is for classification, and data.task is regression");
  }
  const auto& s = spec.optimizer.schedule;
  if (s.warmup > c.max_budget) {
    throw InputError(fmt::format("{}.lr_warmup: {:g} is more than budget.max ({:g} {}): the rate would never reach lr",
                                 where, s.warmup, c.max_budget, c.budget_unit));
  }
}

void check_dropout_perturbable(const tuners::SearchSpace& space) {
  for (const auto& p : space.params()) {
    if (p.name != "dropout") continue;
    bool above_zero = p.kind == tuners::ParamSpec::Kind::Choice
                          ? std::all_of(p.values.begin(), p.values.end(),
                                        [](const tuners::ParamValue& v) { return tuners::as_number(v, "dropout") > 0; })
                          : p.low > 0;
    if (!above_zero) {
      throw InputError("tuner.perturb: dropout can be perturbed only where the space keeps it above 0 (a dropout of "
                       "0 has no dropout layer: another architecture); give space.dropout a lower end above 0");
    }
  }
}

}  // namespace

void validate(const ExperimentConfig& c) {
  if (c.listen.rfind("ipc://", 0) == 0) check_ipc_path(c.listen);
  // Here, not in the keys' own checks: --device, --precision and --mixed-packs may change them
  // after the config was read. A device resolved only on the actor (auto, a node's GPUs) is
  // checked there.
  if (c.device == "cpu") spec::resolve_precision(spec::parse_precision(c.precision, "precision"), c.device);
  if (c.deterministic && c.mixed_packs == packing::MixedPacks::Always) {
    throw InputError("deterministic: true trains one unit at a time per actor (units side by side on one GPU do "
                     "not repeat bit for bit); mixed_packs \"always\" contradicts it: give auto or never");
  }
  // A job trains at least a step (actors/pack_executor.cpp): a budget in steps below one would
  // be reported as reached by a job that trained more.
  if (c.budget_unit == "steps") {
    for (const auto& [key, value] : {std::pair{"budget.max", c.max_budget}, std::pair{"budget.min", c.min_budget}}) {
      if (value < 1) {
        throw InputError(std::string(key) + ": " + json(value).dump() +
                         " steps is less than a step, the least a job trains; use at least 1");
      }
    }
  }
  // Building the tuner checks its name and its own settings.
  const auto build_tuner = [&c](const tuners::TunerContext& context) {
    try {
      tuners::TunerRegistry::instance().create(c.tuner, context);
    } catch (const InputError& e) {
      const std::string what = e.what();
      if (c.settings_tuner.empty() || what.rfind("tuner.", 0) != 0) throw;
      throw InputError(what + " (the config's tuner settings were written for " + c.settings_tuner +
                       "; with --tuner " + c.tuner + " remove or change them)");
    }
  };
  build_tuner(tuner_context(c));

  // Population-based training hands a member its donor's checkpoint with the explored
  // config: a perturbed value the checkpoint's shapes or optimizer state depend on would not fit.
  if (c.tuner == "pbt") {
    const auto& allowed = spec::perturbable_hyperparameters();
    for (const auto& name : c.tuner_settings.value("perturb", json::array())) {
      if (name == "dropout") check_dropout_perturbable(c.space);
      if (!name.is_string() || std::find(allowed.begin(), allowed.end(), name.get<std::string>()) != allowed.end()) {
        continue;
      }
      throw InputError(fmt::format("tuner.perturb: {} changes what a checkpoint holds (the model's shape, the "
                                   "optimizer or the batch); pbt can perturb {}",
                                   name.get<std::string>(), fmt::join(allowed, ", ")));
    }
  }

  // The fixed values alone, then each end of every range and each choice on top of them:
  // every config the space can produce is then a valid trial.
  auto fixed = c.model;
  // A torchscript model's file may be the space's choice alone: its first stands in for it.
  for (const auto& p : c.space.params()) {
    if (p.name == "path" && !fixed.count("path") && !p.values.empty()) fixed["path"] = p.values.front();
  }
  const auto fixed_spec = spec::parse_trial_spec(fixed, "model");
  check_recipe(fixed_spec, c, "model");
  int largest_batch = fixed_spec.batch_size, smallest_batch = fixed_spec.batch_size;
  // With the family fixed to mlp, a convolution's hyper-parameters would only be recorded in
  // each trial's config and never change a model: the user meant something else.
  const auto sampled = [&](const std::string& name) {
    const auto& params = c.space.params();
    return std::any_of(params.begin(), params.end(), [&](const tuners::ParamSpec& p) { return p.name == name; });
  };
  if (!sampled("family") && fixed_spec.model.family == "mlp") {
    for (const char* key : {"channels", "kernel", "batch_norm"}) {
      const bool in_space = sampled(key);
      if (in_space || fixed.count(key)) {
        throw InputError(std::string(in_space ? "space." : "model.") + key +
                         ": a cnn hyper-parameter, but model.family is mlp; remove it or set model.family to cnn");
      }
    }
  }
  for (const auto& p : c.space.params()) {
    std::vector<tuners::ParamValue> probes = p.values;
    if (p.kind == tuners::ParamSpec::Kind::RandInt) {
      probes = {static_cast<std::int64_t>(p.low), static_cast<std::int64_t>(p.high)};
    } else if (p.kind != tuners::ParamSpec::Kind::Choice) {
      probes = {p.low, p.high};
    }
    for (const auto& v : probes) {
      auto trial = fixed;
      trial[p.name] = v;
      const auto spec = spec::parse_trial_spec(trial, "space");
      check_recipe(spec, c, "space");
      const int batch = spec.batch_size;
      largest_batch = std::max(largest_batch, batch);
      smallest_batch = std::min(smallest_batch, batch);
    }
  }
  // The headers first: a data set too large for the actors' memory is refused before it is
  // read; then every file in full.
  const auto shape = datasets::data_shape(c.data);
  check_data_fits(c, shape);
  datasets::check_data(c.data);
  if (c.data.train_size == 0 && c.budget_unit != "epochs") return;
  auto all = c.data;
  all.train_size = 0;
  const auto available = datasets::train_examples(all);
  if (c.data.train_size > available) {
    throw InputError("data.train_size: " + std::to_string(c.data.train_size) + " is more than the " +
                     std::to_string(available) + " training examples the data holds beyond the validation split; " +
                     "use at most that, or 0 for all of them");
  }
  // An epoch is floor(images / batch_size) steps: with fewer images than a batch, every job would
  // train one step whatever its budget.
  if (c.budget_unit == "epochs") {
    const auto images = c.data.train_size > 0 ? c.data.train_size : available;
    if (images < static_cast<std::uint32_t>(largest_batch)) {
      throw InputError("data.train_size: " + std::to_string(images) + " training examples make no whole batch of " +
                       std::to_string(largest_batch) + " (batch_size); use more training examples or a smaller batch_size");
    }
    // An epoch is images / batch_size steps (BatchStream::steps_per_epoch): the smallest batch
    // makes the most steps, the largest the fewest.
    const auto epoch_text = [&](int batch) {
      return std::to_string(images / static_cast<std::uint32_t>(batch)) + " steps an epoch with batch_size " +
             std::to_string(batch) + " on " + std::to_string(images) + " examples";
    };
    const double most_steps = static_cast<double>(images / static_cast<std::uint32_t>(smallest_batch));
    if (c.max_budget * most_steps > config_table::kMaxSteps) {
      throw InputError("budget.max: " + json(c.max_budget).dump() + " epochs of " + epoch_text(smallest_batch) +
                       " are more than the 9007199254740992 (2^53) steps a trial can count; use at most " +
                       std::to_string(static_cast<std::int64_t>(config_table::kMaxSteps / most_steps)) + " epochs");
    }
    const double fewest_steps = static_cast<double>(images / static_cast<std::uint32_t>(largest_batch));
    if (c.report_every > 0 && c.report_every * fewest_steps < 1) {
      throw InputError("budget.report_every: " + json(c.report_every).dump() + " epochs is less than a step (" +
                       epoch_text(largest_batch) + "), after which a report comes at the earliest; use 0 or at least " +
                       json(1 / fewest_steps).dump());
    }
    // The tuner's budget settings (pbt's interval) against a step of the data.
    auto context = tuner_context(c);
    context.step_budget = 1 / fewest_steps;
    context.step_note = epoch_text(largest_batch);
    build_tuner(context);
    // A job trains at least a step, as for a budget in steps above: a budget below a step of
    // the largest batch would be reported as reached by a job that trained more.
    for (const auto& [key, value] : {std::pair{"budget.max", c.max_budget}, std::pair{"budget.min", c.min_budget}}) {
      if (value * fewest_steps < 1) {
        throw InputError(std::string(key) + ": " + json(value).dump() + " epochs is less than a step (" +
                         epoch_text(largest_batch) + "), the least a job trains; use at least " +
                         json(1 / fewest_steps).dump());
      }
    }
  }
}

}  // namespace packtune

namespace packtune {

int local_actor_threads(const ExperimentConfig& config) {
  if (config.threads_per_actor > 0) return config.threads_per_actor;
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  return std::max(1, cores / std::max(1, config.actors));
}

}  // namespace packtune
