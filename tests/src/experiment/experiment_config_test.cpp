#include <cstdlib>
#include <optional>
#include <string>

#include <catch2/catch.hpp>

#include "actors/device_syntax.hpp"
#include "experiment/experiment_config.hpp"
#include "packtune/error.hpp"

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
  CHECK_THAT(with("/model/family", "resnet"), Catch::Contains("model.family") && Catch::Contains("mlp"));
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
  CHECK_NOTHROW(packtune::actors::check_device_syntax("cuda:123456789"));
  CHECK_THROWS_AS(packtune::actors::check_device_syntax("cuda:1234567890"), InputError);
  CHECK_THROWS_AS(packtune::actors::check_device_syntax("cuda:"), InputError);
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
