// The config table (experiment/config_keys.def): what comes from it agrees with what packtune
// did before the table, key by key: the resume check, the config as run, the enums' words.
#include <filesystem>
#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "experiment/config_keys.hpp"
#include "experiment/experiment_config.hpp"
#include "packtune/error.hpp"

using namespace packtune;
using nlohmann::json;

TEST_CASE("a resumed experiment may change where its actors are and how they join, nothing else") {
  std::set<std::string> may_change;
  for (const auto& key : config_table::keys()) {
    if (key.resume == config_table::Resume::MayChange) may_change.insert(key.name);
  }
  CHECK(may_change ==
        std::set<std::string>{"actors", "listen", "keys", "insecure", "join_timeout_seconds", "export"});
  const json ran = {{"actors", 2}, {"seed", 1}, {"listen", "ipc"}, {"tuner", {{"eta", 3}}}};
  const json now = {{"actors", 0}, {"seed", 2}, {"listen", "tcp"}, {"tuner", {{"eta", 2}}}};
  CHECK(resume_differences(ran, now) == std::vector<std::string>{"seed", "tuner.eta"});
}

TEST_CASE("the enum keys parse once and are recorded with the words of the config") {
  auto c = parse_config(json{{"fuse", false}, {"mixed_packs", "always"}, {"keep_checkpoints", "all"}}, "x.json");
  CHECK(c.fuse == packing::FuseMode::Never);
  CHECK(c.mixed_packs == packing::MixedPacks::Always);
  CHECK(c.keep_checkpoints == KeepCheckpoints::All);
  CHECK(parse_config(json{{"fuse", true}}, "x.json").fuse == packing::FuseMode::Auto);
  record_as_run(c);
  CHECK(c.source["fuse"] == "never");
  CHECK(c.source["mixed_packs"] == "always");
  CHECK(c.source["keep_checkpoints"] == "all");
  CHECK_THROWS_WITH(parse_config(json{{"fuse", "sometimes"}}, "x.json"),
                    "fuse: unknown value \"sometimes\"; expected auto, always or never");
  CHECK_THROWS_WITH(parse_config(json{{"mixed_packs", 1}}, "x.json"), "mixed_packs: expected a string, got an integer (1)");
  CHECK_THROWS_WITH(parse_config(json{{"keep_checkpoints", "some"}}, "x.json"),
                    "keep_checkpoints: unknown value \"some\"; expected all or needed");
  CHECK_THROWS_WITH(parse_config(json{{"mode", "up"}}, "x.json"), "mode: unknown value \"up\"; expected min or max");
  Overrides o;
  o.mixed_packs = "sometimes";
  CHECK_THROWS_WITH(apply_overrides(c, o), "--mixed-packs: unknown value \"sometimes\"; expected auto, always or never");
}

TEST_CASE("the config as run records the keys overrides change, the data and the task, and only those") {
  auto c = parse_config(json{{"name", "n"}, {"replan", false}}, "x.json");
  record_as_run(c);
  std::set<std::string> keys;
  for (const auto& [key, value] : c.source.items()) keys.insert(key);
  CHECK(keys == std::set<std::string>{"name", "seed", "actors", "listen", "device", "max_pack", "fuse", "mixed_packs",
                                      "precision", "keep_checkpoints", "tuner", "threads_per_actor", "replan",
                                      "data", "task"});
  Overrides o;
  o.keys = "k";
  o.tuner_plugin = std::vector<std::string>{"p.so"};
  apply_overrides(c, o);
  record_as_run(c);
  CHECK(c.source["keys"] == "k");
  CHECK(c.source.contains("tuner_plugin"));
}

TEST_CASE("the overrides check what they did before the table") {
  ExperimentConfig c;
  Overrides o;
  o.max_pack = 0;
  CHECK_THROWS_WITH(apply_overrides(c, o), "--max-pack: expected at least 1");
  o = {};
  o.seed = -1;
  CHECK_THROWS_WITH(apply_overrides(c, o), "--seed: expected an integer from 0 to 9223372036854775807");
  o = {};
  o.listen = "";
  CHECK_THROWS_WITH(apply_overrides(c, o), "--listen: expected ipc, tcp or a ZeroMQ endpoint");
  o = {};
  o.tuner_plugin = std::vector<std::string>{"a.so", "b.so"};
  CHECK_THROWS_WITH(check_override_counts(o), "--tuner-plugin: one library per run");
  o = {};
  o.trials = 5000;
  o.actors = 5000;  // an override has no upper bound: it never had one
  apply_overrides(c, o);
  CHECK(c.trials == 5000);
  CHECK(c.actors == 5000);
}

TEST_CASE("every key has a row in docs/config.md") {
  const auto page = config_table::markdown();
  for (const auto& key : config_table::keys()) {
    CHECK(page.find("| `" + std::string(key.name) + "` |") != std::string::npos);
  }
  CHECK(page.find("| `actors` | integer | 1 | 0 to 4096 | --actors | may change |") != std::string::npos);
}

TEST_CASE("the data block: relative paths beside the config, recorded absolute with the keys of its format") {
  const json block = {{"format", "npy"}, {"x", "in/x.npy"}, {"y", "/abs/y.npy"}, {"augment", {{"flip", true}}}};
  auto c = parse_config(json{{"data", block}, {"task", "regression"}}, "/cfg/exp.json");
  CHECK(c.data.format == datasets::DataFormat::Npy);
  CHECK(c.data.task == datasets::Task::Regression);
  CHECK(c.data.x == "/cfg/in/x.npy");
  CHECK(c.data.y == "/abs/y.npy");
  CHECK(c.data.augment.flip);
  CHECK(c.data.normalize);
  record_as_run(c);
  CHECK(c.source["data"] == json{{"format", "npy"}, {"x", "/cfg/in/x.npy"}, {"y", "/abs/y.npy"}, {"train_size", 0},
                                 {"validation_size", 0}, {"normalize", true}, {"order", "shared"},
                                 {"augment", {{"crop_padding", 0}, {"flip", true}, {"per_trial", true}}}});
  CHECK(c.source["task"] == "regression");
  // --resume reads the config as run from the results folder: the paths stay where they were.
  const auto again = parse_config(c.source, "/results/run/journal.jsonl");
  CHECK(again.data.x == "/cfg/in/x.npy");
  CHECK(again.data.task == datasets::Task::Regression);
  auto resumed = again;
  record_as_run(resumed);
  CHECK(resume_differences(c.source, resumed.source).empty());
  const auto h5 = parse_config(json{{"data", {{"format", "hdf5"}, {"path", "d.h5"}, {"y", "labels"}}}}, "/cfg/e.json");
  CHECK(h5.data.path == "/cfg/d.h5");
  CHECK(h5.data.x == "x");
  CHECK(h5.data.y == "labels");
}

TEST_CASE("bad data blocks and task keys are one-line errors naming the key") {
  const auto error_of = [](const json& j) {
    try {
      parse_config(j, "x.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  CHECK(error_of(json{{"data", {{"format", "csv"}}}}) == "data.format: unknown format \"csv\"; expected idx, hdf5 or npy");
  CHECK(error_of(json{{"data", {{"format", "hdf5"}}}}) == "data.path: format hdf5 needs the HDF5 file of the training data");
  CHECK(error_of(json{{"data", {{"format", "npy"}, {"x", "x.npy"}}}}) == "data.y: format npy needs the .npy file of the "
                                                                         "labels or targets");
  CHECK(error_of(json{{"data", {{"format", "npy"}, {"x", "a"}, {"y", "b"}, {"test_x", "c"}}}}) ==
        "data.test_y: the test split needs both test_x and test_y");
  CHECK(error_of(json{{"data", {{"path", "d.h5"}}}}) ==
        "data.path: not read by format idx; its keys are format, name, dir, train_size, validation_size, normalize, "
        "augment, order");
  CHECK(error_of(json{{"data", {{"order", "sorted"}}}}) == "data.order: unknown order \"sorted\"; expected shared or "
                                                            "per_trial");
  CHECK(parse_config(json{{"data", {{"order", "per_trial"}}}}, "x.json").data.order_per_trial);
  CHECK_FALSE(parse_config(json::object(), "x.json").data.order_per_trial);
  CHECK(error_of(json{{"data", {{"normalize", 1}}}}) == "data.normalize: expected true or false, got an integer (1)");
  CHECK(error_of(json{{"data", {{"augment", {{"crop_padding", -1}}}}}}) ==
        "data.augment.crop_padding: -1 is out of range; expected 0 to 64");
  CHECK(error_of(json{{"data", {{"augment", {{"rotate", true}}}}}}) ==
        "data.augment.rotate: unknown key; expected one of crop_padding, flip, per_trial");
  CHECK(error_of(json{{"task", "ranking"}}) == "task: unknown value \"ranking\"; expected classification or regression");
  CHECK(error_of(json{{"task", "regression"}, {"metric", "val_accuracy"}}) ==
        "metric: val_accuracy needs task classification; a regression task ranks trials by val_mse, val_mae, val_loss "
        "or train_loss");
  CHECK(error_of(json{{"metric", "val_mse"}}) ==
        "metric: val_mse needs \"task\": \"regression\"; a classification task ranks trials by val_accuracy, "
        "val_loss or train_loss");
}

TEST_CASE("a regression task ranks by val_mse unless told otherwise, lower being better") {
  auto c = parse_config(json{{"task", "regression"}}, "x.json");
  CHECK(c.metric == "val_mse");
  CHECK(c.mode == tuners::Mode::Min);
  c = parse_config(json{{"task", "regression"}, {"metric", "val_mae"}}, "x.json");
  CHECK(c.metric == "val_mae");
  CHECK(c.mode == tuners::Mode::Min);
  CHECK(parse_config(json::object(), "x.json").metric == "val_accuracy");
}

TEST_CASE("export: stores beside the config, recorded absolute, free to change on --resume") {
  auto c = parse_config(json{{"export", {{"mlflow", true}, {"tensorboard", "tb"}}}}, "/cfg/exp.json");
  CHECK(c.export_mlflow == "/cfg/mlruns");
  CHECK(c.export_tensorboard == "/cfg/tb");
  const auto mlflow = [](const json& value) {
    return parse_config(json{{"export", {{"mlflow", value}}}}, "/cfg/e.json").export_mlflow;
  };
  CHECK(mlflow("http://host:5000") == "http://host:5000");
  CHECK(mlflow("sqlite:///x.db") == "sqlite:///x.db");
  CHECK(mlflow("databricks") == "/cfg/databricks");  // no colon, no scheme: a folder
  CHECK(mlflow("databricks://team") == "databricks://team");
  CHECK(mlflow("https://me@host:5000/") == "https://me@host:5000/");  // a user alone is no secret
  // A password would stay in config.json and the journal: refused, with where it goes instead.
  CHECK_THROWS_WITH(mlflow("https://me:secret@host:5000"), Catch::Contains("export.mlflow: the tracking URI holds a "
                                                                          "password") &&
                                                           Catch::Contains("MLFLOW_TRACKING_PASSWORD"));
  CHECK_THROWS_AS(mlflow("http://me:secret@host/path@x"), packtune::InputError);
  CHECK(mlflow("../store") == "/store");
  CHECK(mlflow(false).empty());
  record_as_run(c);
  CHECK(c.source["export"] == json{{"mlflow", "/cfg/mlruns"}, {"tensorboard", "/cfg/tb"}});
  // --resume reads the config as run from the results folder: the stores stay where they were.
  auto resumed = parse_config(c.source, "/results/run/journal.jsonl");
  CHECK(resumed.export_mlflow == "/cfg/mlruns");
  Overrides o;
  o.export_mlflow = "";
  o.export_tensorboard = "other";
  apply_overrides(resumed, o);
  CHECK(resumed.export_mlflow == (std::filesystem::current_path() / "mlruns").string());
  CHECK(resumed.export_tensorboard == (std::filesystem::current_path() / "other").string());
  record_as_run(resumed);
  CHECK(resume_differences(c.source, resumed.source).empty());
  auto none = parse_config(json{{"export", {{"mlflow", false}}}}, "x.json");
  record_as_run(none);
  CHECK_FALSE(none.source.contains("export"));
}

TEST_CASE("export: a bad store is one line naming the key") {
  const auto parse = [](const json& block) { return parse_config(json{{"export", block}}, "x.json"); };
  CHECK_THROWS_WITH(parse(json{{"mlflow", 3}}),
                    "export.mlflow: expected true, false, a tracking URI or a folder, got an integer (3)");
  CHECK_THROWS_WITH(parse(json{{"mlflow", ""}}),
                    "export.mlflow: \"\" names no store; expected true, a tracking URI or a folder");
  CHECK_THROWS_WITH(parse(json{{"tensorboard", true}}),
                    "export.tensorboard: expected a folder for the event files, got boolean");
  CHECK_THROWS_WITH(parse(json{{"wandb", "x"}}), "export.wandb: unknown key; expected one of mlflow, tensorboard");
  CHECK_THROWS_WITH(parse("mlruns"), "export: expected an object, got string");
  ExperimentConfig c;
  Overrides o;
  o.export_tensorboard = "";
  CHECK_THROWS_WITH(apply_overrides(c, o), "--tensorboard: expected a folder");
}
