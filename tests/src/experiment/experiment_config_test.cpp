#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>

#include <catch2/catch.hpp>

#include "../../temp_dir.hpp"
#include "experiment/experiment_config.hpp"
#include "packtune/error.hpp"
#include "spec/device_syntax.hpp"

using packtune::InputError;
using packtune::parse_config;
using nlohmann::json;

namespace {
json base() {
  return json::parse(R"({
    "seed": 4,
    "budget": {"unit": "epochs", "min": 0.5, "max": 2, "report_every": 0.5},
    "tuner": {"name": "random", "trials": 6},
    "actors": 2,
    "device": "cpu",
    "data": {"train_size": 100, "validation_size": 50},
    "model": {"family": "mlp", "width": 32},
    "space": {"lr": {"type": "loguniform", "low": 1e-4, "high": 1e-1}}
  })");
}

std::string error_of(const json& j) {
  try {
    auto c = parse_config(j, "x.json");
    packtune::validate(c);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// The parser's error alone (validate() also needs the data files).
std::string parse_error_of(const json& j) {
  try {
    parse_config(j, "x.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST_CASE("a valid config parses with its values") {
  auto c = parse_config(base(), "dir/exp.json");
  CHECK(c.name == "exp");
  CHECK(c.seed == 4);
  CHECK(c.min_budget == 0.5);
  CHECK(c.max_budget == 2);
  CHECK(c.trials == 6);
  CHECK(c.actors == 2);
  CHECK(c.data.train_size == 100);
  CHECK(std::get<std::int64_t>(c.model.at("width")) == 32);
  CHECK(c.mode == packtune::tuners::Mode::Max);
  CHECK(c.space.params().size() == 1);
  CHECK(c.replan);  // re-planning at rung boundaries is on unless the config turns it off
}

TEST_CASE("replan is a boolean that turns re-planning at rung boundaries off") {
  auto j = base();
  j["replan"] = false;
  CHECK_FALSE(parse_config(j, "x").replan);
  j["replan"] = "no";
  CHECK_THAT(error_of(j), Catch::Contains("replan") && Catch::Contains("true or false"));
}

TEST_CASE("deterministic is a boolean, off by default, that mixed_packs always contradicts") {
  auto j = base();
  j["model"]["batch_size"] = 16;  // a whole batch of base()'s 100 examples, for validate()
  CHECK_FALSE(parse_config(j, "x").deterministic);
  j["deterministic"] = true;
  CHECK(parse_config(j, "x").deterministic);
  CHECK(error_of(j) == "no error");
  j["mixed_packs"] = "always";
  CHECK_THAT(error_of(j), Catch::Contains("deterministic: true trains one unit at a time") &&
                              Catch::Contains("mixed_packs \"always\" contradicts it"));
  // The same contradiction from the command line, which overrides after the config was read.
  j["mixed_packs"] = "auto";
  auto c = parse_config(j, "x");
  packtune::Overrides o;
  o.mixed_packs = "always";
  packtune::apply_overrides(c, o);
  CHECK_THROWS_WITH(packtune::validate(c), Catch::Contains("contradicts it"));
  j["deterministic"] = "yes";
  CHECK_THAT(parse_error_of(j), Catch::Contains("deterministic") && Catch::Contains("true or false"));
}

TEST_CASE("precision is auto by default, one of four words, and bf16 only where the device may be a GPU") {
  auto j = base();
  j["model"]["batch_size"] = 16;  // a whole batch of base()'s 100 examples, for validate()
  CHECK(parse_config(j, "x").precision == "auto");
  j["precision"] = "fp16";
  CHECK(parse_error_of(j) == "precision: unknown precision \"fp16\"; expected auto, fp32, tf32 or bf16");
  j["precision"] = "bf16";  // with "device": "cpu"
  CHECK_THAT(error_of(j), Catch::Contains("precision bf16 is for GPUs"));
  j["device"] = "cuda";
  CHECK(error_of(j) == "no error");
  j["device"] = "auto";  // decided on each actor, which refuses it on a CPU
  CHECK(error_of(j) == "no error");
  // From the command line.
  j["device"] = "cpu";
  j["precision"] = "tf32";
  auto c = parse_config(j, "x");
  packtune::Overrides o;
  o.precision = "bf16";
  packtune::apply_overrides(c, o);
  CHECK_THROWS_WITH(packtune::validate(c), Catch::Contains("precision bf16 is for GPUs"));
  o.precision = "half";
  CHECK_THROWS_WITH(packtune::apply_overrides(c, o), Catch::Contains("--precision: unknown precision"));
}

TEST_CASE("the metric sets the default mode") {
  auto j = base();
  j["metric"] = "val_loss";
  CHECK(parse_config(j, "x").mode == packtune::tuners::Mode::Min);
  j["mode"] = "max";
  CHECK(parse_config(j, "x").mode == packtune::tuners::Mode::Max);
}

TEST_CASE("overrides replace config values") {
  auto c = parse_config(base(), "x");
  packtune::Overrides o;
  o.trials = 9;
  o.actors = 3;
  o.seed = 11;
  o.device = "auto";
  o.tuner = "random";
  packtune::apply_overrides(c, o);
  CHECK(c.trials == 9);
  CHECK(c.actors == 3);
  CHECK(c.seed == 11);
  CHECK(c.device == "auto");
  o = {};
  o.device = "tpu";
  CHECK_THROWS_AS(packtune::apply_overrides(c, o), InputError);
  o = {};
  o.actors = -1;
  CHECK_THROWS_AS(packtune::apply_overrides(c, o), InputError);
}

TEST_CASE("a driver without local actors: actors 0, --listen and --keys, a join timeout") {
  auto j = base();
  j["actors"] = 0;
  j["join_timeout_seconds"] = 5;
  auto c = parse_config(j, "x");
  CHECK(c.actors == 0);
  CHECK(c.join_timeout_seconds == 5);
  CHECK(parse_config(base(), "x").join_timeout_seconds == 120);
  packtune::Overrides o;
  o.actors = 0;
  o.listen = "tcp://0.0.0.0:5555";
  o.keys = "keys";
  c = parse_config(base(), "x");
  packtune::apply_overrides(c, o);
  CHECK(c.actors == 0);
  CHECK(c.listen == "tcp://0.0.0.0:5555");
  CHECK(c.keys == "keys");
}

TEST_CASE("bad configs name the field and what is expected") {
  auto with = [](const char* pointer, json value) {
    auto j = base();
    j[json::json_pointer(pointer)] = value;
    return error_of(j);
  };
  CHECK_THAT(with("/learning_rate", 0.1), Catch::Contains("learning_rate: unknown key"));
  CHECK_THAT(with("/budget/maximum", 3), Catch::Contains("budget.maximum: unknown key"));
  CHECK_THAT(with("/actors", "two"), Catch::Contains("actors: expected an integer"));
  CHECK_THAT(with("/actors", -1), Catch::Contains("actors") && Catch::Contains("out of range"));
  CHECK_THAT(with("/join_timeout_seconds", 0), Catch::Contains("join_timeout_seconds") && Catch::Contains("> 0"));
  CHECK_THAT(with("/budget/max", -1), Catch::Contains("budget.max"));
  CHECK_THAT(with("/budget/min", 5), Catch::Contains("budget.min") && Catch::Contains("min <= max"));
  CHECK_THAT(with("/budget/unit", "hours"), Catch::Contains("budget.unit"));
  CHECK_THAT(with("/tuner/name", "bayes"), Catch::Contains("unknown tuner \"bayes\""));
  CHECK_THAT(with("/tuner/trials", 0), Catch::Contains("tuner.trials"));
  CHECK_THAT(with("/device", "tpu"), Catch::Contains("device") && Catch::Contains("cuda:N"));
  // An index that does not fit an int ended in std::out_of_range where the actor resolved it.
  CHECK_THAT(with("/device", "cuda:99999999999"), Catch::Contains("device") && Catch::Contains("cuda:N"));
  CHECK_THAT(with("/model/family", "transformer"), Catch::Contains("model.family") && Catch::Contains("mlp"));
  CHECK_THAT(with("/model/colour", "red"), Catch::Contains("model.colour: unknown hyper-parameter"));
  CHECK_THAT(with("/space/lr/high", 1e-5), Catch::Contains("space.lr") && Catch::Contains("empty range"));
  CHECK_THAT(with("/space/depth", json::parse(R"({"type": "randint", "low": 1, "high": 99})")),
             Catch::Contains("space.depth") && Catch::Contains("out of range"));
  CHECK_THAT(with("/space/optimizer", json::parse(R"({"type": "choice", "values": ["sgd", "lbfgs"]})")),
             Catch::Contains("lbfgs"));
  CHECK_THAT(with("/data/dir", "/nonexistent"), Catch::Contains("not found"));
  CHECK_THAT(with("/metric", "f1"), Catch::Contains("metric"));
  CHECK_THAT(with("/seed", -3), Catch::Contains("seed"));
}

TEST_CASE("a device index is at most 9 digits, so that it fits the int the actor makes of it") {
  CHECK_NOTHROW(packtune::spec::check_device_syntax("cuda:123456789"));
  CHECK_THROWS_AS(packtune::spec::check_device_syntax("cuda:1234567890"), InputError);
  CHECK_THROWS_AS(packtune::spec::check_device_syntax("cuda:"), InputError);
}

TEST_CASE("missing and malformed config files are input errors") {
  CHECK_THROWS_WITH(packtune::load_config("/nonexistent/config.json"), Catch::Contains("not found"));
  CHECK_THROWS_AS(packtune::parse_config_text("{\"seed\": ", "x.json"), InputError);
}

// Found by fuzz/fuzz_config: nlohmann's parser throws out_of_range, not parse_error, for a
// number beyond a double's range, and it escaped as neither an InputError nor a line naming
// the file (the input is the fuzzer's, cut where it went wrong).
TEST_CASE("a number too large for a double is not valid JSON, an input error") {
  const std::string text = R"({"budget": {"min": 1, "max": 81}, "tuner": {"nameight_decay": {"type": "loguniform", )"
                           R"("low": 1e-6, "high": 1e22222222222222222222222222222222222222222222222222222222)";
  CHECK_THROWS_WITH(packtune::parse_config_text(text, "x.json"),
                    Catch::Contains("x.json: not valid JSON") && Catch::Contains("number overflow"));
  CHECK_THROWS_AS(packtune::parse_config_text(R"({"seed": 1e400})", "x.json"), InputError);
}

namespace {
// Sets PACKTUNE_DATA_DIR (or unsets it for nullptr) for one scope, restoring the caller's value.
class DataDirVariable {
 public:
  explicit DataDirVariable(const char* value) {
    if (const char* old = std::getenv("PACKTUNE_DATA_DIR")) old_ = old;
    if (value) setenv("PACKTUNE_DATA_DIR", value, 1);
    else unsetenv("PACKTUNE_DATA_DIR");
  }
  ~DataDirVariable() {
    if (old_) setenv("PACKTUNE_DATA_DIR", old_->c_str(), 1);
    else unsetenv("PACKTUNE_DATA_DIR");
  }

 private:
  std::optional<std::string> old_;
};
}  // namespace

TEST_CASE("without data.dir the data is in PACKTUNE_DATA_DIR, else in Debian's path") {
  {
    DataDirVariable unset(nullptr);
    CHECK(parse_config(base(), "x").data.dir == "/usr/share/datasets/fashion-mnist");
  }
  {
    DataDirVariable set("/elsewhere/fashion-mnist");
    CHECK(parse_config(base(), "x").data.dir == "/elsewhere/fashion-mnist");
    auto j = base();
    j["data"]["dir"] = "/explicit";
    CHECK(parse_config(j, "x").data.dir == "/explicit");
    CHECK_THAT(error_of(base()), Catch::Contains("/elsewhere/fashion-mnist/train-images")
                                     && Catch::Contains("PACKTUNE_DATA_DIR"));
  }
}

TEST_CASE("actor_memory is a plain positive size that fits in 64 bits") {
  auto j = base();
  j["actor_memory"] = "600MiB";
  CHECK(parse_config(j, "x").actor_memory == 600LL << 20);
  // strtod reads all of these; none is a size anyone writes, or one the planner can hold.
  for (const char* bad : {"0x10MiB", " 600MiB", "+600MiB", "inf", "nanGiB", "0.1B", "1e300TiB", "9e18"}) {
    INFO(bad);
    j["actor_memory"] = bad;
    CHECK_THAT(error_of(j), Catch::Contains("actor_memory") && Catch::Contains("is not a memory size"));
  }
}

TEST_CASE("a key given twice, at any depth, is refused naming it") {
  using packtune::parse_config_text;
  CHECK_THROWS_WITH(parse_config_text(R"({"seed": 1, "seed": 2})", "x.json"),
                    "seed: given twice in x.json; JSON would keep only the last value, so give it once");
  CHECK_THROWS_WITH(parse_config_text(R"({"budget": {"max": 1, "min": 1, "max": 2}})", "x.json"),
                    Catch::StartsWith("budget.max: given twice"));
  CHECK_THROWS_WITH(parse_config_text(R"({"space": {"lr": {"type": "choice", "values": [{"a": 1, "a": 2}]}}})",
                                      "x.json"),
                    Catch::StartsWith("space.lr.values.a: given twice"));
  // One name in two objects is two keys; the same object twice in an array too.
  CHECK_NOTHROW(parse_config_text(R"({"budget": {"max": 2, "min": 1}, "tuner": {"name": "random", "trials": 2},
                                      "model": {"width": 32}, "space": {"width": {"type": "choice",
                                      "values": [16, 32]}}})",
                                  "x.json"));
  CHECK_THROWS_WITH(parse_config_text(R"({"space": {"lr": {"type": "choice", "values": [{"a": 1}, {"a": 2}]}}})",
                                      "x.json"),
                    !Catch::Contains("twice"));
}

TEST_CASE("the name is a plain file name, so the results folder stays in runs/") {
  auto with_name = [](json name) {
    auto j = base();
    j["name"] = name;
    return parse_error_of(j);
  };
  for (const char* bad : {"../../../tmp/x", "a/b", "/abs", ".", "..", "", "a b", "tab\there", "x\n"}) {
    INFO(bad);
    CHECK_THAT(with_name(bad), Catch::StartsWith("name: ") && Catch::Contains("is not a plain name"));
  }
  CHECK_THAT(with_name(std::string(101, 'a')), Catch::Contains("is not a plain name"));
  CHECK(with_name(std::string(100, 'a')) == "no error");
  CHECK(with_name("exp-1_a.b") == "no error");
  CHECK(with_name("..x") == "no error");  // a name, not the parent folder
  // The default comes from the file's name, which may hold anything but a slash.
  CHECK(parse_config(base(), "dir/my exp (2).json").name == "my_exp__2_");
  CHECK(parse_config(base(), "dir/..json").name == "experiment");
  CHECK(packtune::experiment_name_from(std::string(300, 'b')).size() == 100);
}

TEST_CASE("listen: an inproc endpoint, from the config or --listen, is refused") {
  auto j = base();
  j["listen"] = "inproc://driver";
  CHECK_THAT(error_of(j), Catch::StartsWith("listen: inproc://driver is inside the driver's process"));
  auto c = parse_config(base(), "x.json");
  packtune::Overrides o;
  o.listen = "inproc://x";
  CHECK_THROWS_WITH(packtune::apply_overrides(c, o), Catch::StartsWith("--listen: inproc://x"));
}

TEST_CASE("heartbeats and timeouts: no shorter than the machine honours, no longer than its clocks hold") {
  auto with = [](const char* key, double value) {
    auto j = base();
    j[key] = value;
    if (std::string(key) == "heartbeat_seconds") j["actor_timeout_seconds"] = std::max(1.0, 2 * value);
    return parse_error_of(j);
  };
  CHECK_THAT(with("heartbeat_seconds", 0.05), Catch::Contains("heartbeat_seconds") && Catch::Contains(">= 0.1"));
  CHECK(with("heartbeat_seconds", 0.1) == "no error");
  CHECK_THAT(with("heartbeat_seconds", 2e8), Catch::StartsWith("heartbeat_seconds") && Catch::Contains("at most 100000000"));
  for (const char* key : {"actor_timeout_seconds", "join_timeout_seconds", "profile_timeout_seconds", "checkpoint_every"}) {
    INFO(key);
    CHECK_THAT(with(key, 2e8), Catch::StartsWith(key) && Catch::Contains("at most 100000000"));
    CHECK(with(key, 1e8) == "no error");
  }
}

TEST_CASE("memory_estimate_scale stays where the planner's byte counts hold the figures") {
  auto j = base();
  j["memory_estimate_scale"] = 1000;
  CHECK(parse_error_of(j) == "no error");
  j["memory_estimate_scale"] = 1e300;
  CHECK_THAT(parse_error_of(j), Catch::StartsWith("memory_estimate_scale: 1e+300 is out of range") &&
                                    Catch::Contains("at most 1000"));
}

TEST_CASE("budget: a step count a trial can hold, reports no finer than a step and not without end") {
  auto with_budget = [](json budget) {
    auto j = base();
    j["budget"] = budget;
    return parse_error_of(j);
  };
  CHECK_THAT(with_budget({{"unit", "steps"}, {"max", 1e16}}), Catch::Contains("budget.max") && Catch::Contains("at most"));
  CHECK(with_budget({{"unit", "steps"}, {"max", 9007199254740992.0}}) == "no error");
  CHECK_THAT(with_budget({{"unit", "steps"}, {"max", 100}, {"report_every", 0.5}}),
             Catch::Contains("budget.report_every: 0.5 steps cannot be honoured"));
  CHECK(with_budget({{"unit", "steps"}, {"max", 100}, {"report_every", 1}}) == "no error");
  CHECK_THAT(with_budget({{"unit", "epochs"}, {"max", 10}, {"report_every", 1e-5}}),
             Catch::Contains("asks more than 100000 reports") && Catch::Contains("at least 0.0001"));
  CHECK(with_budget({{"unit", "epochs"}, {"max", 10}, {"report_every", 1e-4}}) == "no error");
}

TEST_CASE("budget in epochs: checked against the steps of the data's epoch") {
  // 1000 images: batch 10 makes 100 steps an epoch, batch 100 makes 10.
  auto j = base();
  j["data"] = {{"train_size", 1000}, {"validation_size", 100}};
  j["model"] = {{"family", "mlp"}, {"width", 32}, {"batch_size", 100}};
  j["space"]["batch_size"] = {{"type", "choice"}, {"values", {10, 100}}};
  CHECK(error_of(j) == "no error");
  auto budget = [&](double max, double report_every) {
    auto k = j;
    k["budget"] = {{"unit", "epochs"}, {"max", max}, {"report_every", report_every}};
    return error_of(k);
  };
  CHECK(budget(90071992547409.0, 0) == "no error");  // 2^53 / 100 steps, rounded down
  CHECK_THAT(budget(1e14, 0), Catch::StartsWith("budget.max: ") && Catch::Contains("100 steps an epoch with batch_size 10") &&
                                  Catch::Contains("use at most 90071992547409"));
  CHECK(budget(2, 0.1) == "no error");  // one step of the largest batch
  CHECK_THAT(budget(2, 0.05), Catch::StartsWith("budget.report_every: 0.05 epochs is less than a step") &&
                                  Catch::Contains("10 steps an epoch with batch_size 100") &&
                                  Catch::Contains("at least 0.1"));
}

TEST_CASE("budget settings of a tuner and budget.min: at least a step, in either unit") {
  // pbt's interval of 1e-300 steps once made a run that never ended.
  auto j = base();
  j["data"] = {{"train_size", 1000}, {"validation_size", 100}};
  j["model"] = {{"family", "mlp"}, {"width", 32}, {"batch_size", 100}};  // 10 steps an epoch
  auto pbt = [&](json budget, json interval) {
    auto k = j;
    k["budget"] = std::move(budget);
    k["tuner"] = {{"name", "pbt"}, {"population", 2}, {"perturb", {"lr"}}};
    if (!interval.is_null()) k["tuner"]["interval"] = interval;
    return error_of(k);
  };
  CHECK(pbt({{"unit", "steps"}, {"max", 10}}, 1e-300) ==
        "tuner.interval: 1e-300 steps is less than a step, the least a job trains; use at least 1");
  CHECK(pbt({{"unit", "steps"}, {"max", 10}}, 1) == "no error");
  CHECK(pbt({{"unit", "epochs"}, {"max", 1}}, 0.05) ==
        "tuner.interval: 0.05 epochs is less than a step (10 steps an epoch with batch_size 100 on 1000 examples), "
        "the least a job trains; use at least 0.1");
  CHECK_THAT(pbt({{"unit", "epochs"}, {"min", 0.05}, {"max", 1}}, nullptr),
             Catch::StartsWith("tuner.interval (budget.min by default): 0.05 epochs is less than a step"));
  CHECK(pbt({{"unit", "epochs"}, {"max", 1}}, 0.1) == "no error");
  auto steps = [&](json budget) {
    auto k = j;
    k["budget"] = std::move(budget);
    return error_of(k);
  };
  CHECK(steps({{"unit", "steps"}, {"min", 0.5}, {"max", 10}}) ==
        "budget.min: 0.5 steps is less than a step, the least a job trains; use at least 1");
  CHECK(steps({{"unit", "steps"}, {"max", 1e-300}}) ==
        "budget.max: 1e-300 steps is less than a step, the least a job trains; use at least 1");
  CHECK(steps({{"unit", "steps"}, {"min", 1}, {"max", 10}}) == "no error");
  CHECK(steps({{"unit", "epochs"}, {"min", 0.05}, {"max", 1}}) ==
        "budget.min: 0.05 epochs is less than a step (10 steps an epoch with batch_size 100 on 1000 examples), the "
        "least a job trains; use at least 0.1");
  CHECK(steps({{"unit", "epochs"}, {"max", 0.01}}) ==
        "budget.max: 0.01 epochs is less than a step (10 steps an epoch with batch_size 100 on 1000 examples), the "
        "least a job trains; use at least 0.1");
  CHECK(steps({{"unit", "epochs"}, {"min", 0.1}, {"max", 1}}) == "no error");
}

namespace {
// A unix socket bound at `path`; listening, or left as a killed process leaves one.
int bound_socket(const std::string& path, bool listen) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
  if (listen) REQUIRE(::listen(fd, 4) == 0);
  return fd;
}
}  // namespace

TEST_CASE("an ipc endpoint where a file or a listening socket is is refused; a socket left over is not") {
  packtune::testing::TempDir tmp;
  auto j = base();
  j["data"] = {{"train_size", 1000}, {"validation_size", 100}};
  auto listen_at = [&](const std::string& path) {
    auto k = j;
    k["listen"] = "ipc://" + path;
    return error_of(k);
  };
  CHECK(listen_at(tmp.file("nothing-there.ipc")) == "no error");
  CHECK(listen_at("*") == "no error");
  std::ofstream(tmp.file("regular")) << "precious";
  CHECK(listen_at(tmp.file("regular")) ==
        "listen: " + tmp.file("regular") + " exists and is not a socket; binding there would delete it: name a path "
        "where nothing is");
  CHECK_THAT(listen_at(tmp.path().string()), Catch::Contains("is not a socket"));
  std::filesystem::create_symlink(tmp.file("nothing"), tmp.file("link"));
  CHECK_THAT(listen_at(tmp.file("link")), Catch::Contains("is not a socket"));

  const int live = bound_socket(tmp.file("live.ipc"), true);
  CHECK_THAT(listen_at(tmp.file("live.ipc")), Catch::Contains("is the socket of a running process"));
  ::close(live);  // its file stays: now nobody listens there, as after a driver killed with -9
  CHECK(listen_at(tmp.file("live.ipc")) == "no error");
  const int bound_only = bound_socket(tmp.file("bound.ipc"), false);
  CHECK(listen_at(tmp.file("bound.ipc")) == "no error");
  ::close(bound_only);
}

TEST_CASE("training recipes: known schedules, a step's period, a warmup within budget.max, smoothing for classes") {
  auto with = [](json model, json space = json::object()) {
    auto j = base();
    j["model"]["batch_size"] = 10;
    for (auto& [k, v] : model.items()) j["model"][k] = v;
    for (auto& [k, v] : space.items()) j["space"][k] = v;
    return j;
  };
  CHECK(error_of(with({{"lr_schedule", "cosine"}, {"lr_warmup", 0.5}, {"label_smoothing", 0.1},
                       {"grad_clip_norm", 1.0}})) == "no error");
  CHECK(error_of(with({}, {{"lr_schedule", {{"type", "choice"}, {"values", {"cosine", "one_cycle"}}}},
                           {"label_smoothing", {{"type", "uniform"}, {"low", 0.0}, {"high", 0.2}}}})) == "no error");
  CHECK_THAT(error_of(with({{"lr_schedule", "exponential"}})),
             Catch::StartsWith("model.lr_schedule: \"exponential\" is not allowed; expected one of constant, cosine"));
  CHECK_THAT(error_of(with({{"lr_schedule", "step"}})),
             Catch::StartsWith("model.lr_step_every: lr_schedule \"step\" needs the budget between decays"));
  CHECK_THAT(error_of(with({{"lr_warmup", 3}})),
             Catch::StartsWith("model.lr_warmup: 3 is more than budget.max (2 epochs)"));
  CHECK_THAT(error_of(with({}, {{"lr_warmup", {{"type", "uniform"}, {"low", 0.0}, {"high", 2.5}}}})),
             Catch::StartsWith("space.lr_warmup: 2.5 is more than budget.max"));
  CHECK_THAT(error_of(with({{"label_smoothing", 1.0}})), Catch::StartsWith("model.label_smoothing: 1.0 is out of range"));
  CHECK_THAT(error_of(with({{"grad_clip_norm", -1}})), Catch::StartsWith("model.grad_clip_norm: -1 is out of range"));
}
