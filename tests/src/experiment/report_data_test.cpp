#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "../../temp_dir.hpp"
#include "experiment/report_data.hpp"
#include "experiment/report_page.hpp"
#include "packtune/error.hpp"

using namespace packtune;
using json = nlohmann::json;

namespace {

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

const char* kConfig = R"({"name": "hand", "metric": "val_accuracy", "budget": {"unit": "epochs", "min": 1, "max": 9},
  "tuner": {"name": "hyperband", "eta": 3}, "space": {"lr": {"type": "loguniform", "low": 0.001, "high": 0.1}}})";

// A Hyperband-like run caught in the middle: trials 0 and 1 start in the bracket of budget 1,
// trial 2 in the bracket of budget 3; trial 0 was promoted to 3 and trains to 9 now; trial 3
// failed before its first report.
std::string hand_written_run(const testing::TempDir& dir) {
  const auto out = dir.file("run");
  std::filesystem::create_directories(out);
  write(out + "/config.json", kConfig);
  write(out + "/journal.jsonl",
        std::string(R"({"packtune_journal": 1, "name": "hand", "config": )") + json::parse(kConfig).dump() + "}\n" +
            R"({"job": {"kind": "start", "trial": 0, "budget": 1, "config": {"lr": 0.01}}})" "\n"
            R"({"job": {"kind": "start", "trial": 1, "budget": 1, "config": {"lr": 0.001}}})" "\n"
            R"({"job": {"kind": "start", "trial": 2, "budget": 3, "config": {"lr": 0.05}, "why": {"sampler": "tpe", "budget": 1, "good": [0], "bad": 1}}})" "\n"
            R"({"job": {"kind": "resume", "trial": 0, "budget": 3, "config": {"lr": 0.01}}})" "\n"
            R"({"job": {"kind": "resume", "trial": 0, "budget": 9, "config": {"lr": 0.01}}})" "\n"
            R"({"job": {"kind": "start", "trial": 3, "budget": 1, "config": {"lr": 0.09}}})" "\n"
            R"({"result": {"trial": 3, "budget": 0, "metric": null, "failed": true}})" "\n");
  write(out + "/results.jsonl",
        R"({"trial": 2, "budget": 1, "val_accuracy": 0.3, "final": false, "wall_time": 1.5, "train_seconds": 1, "actor": 1, "unit_size": 1, "unit": "u1", "job_start": 0.2, "config": {"lr": 0.05}})" "\n"
        R"({"trial": 0, "budget": 1, "val_accuracy": 0.5, "final": true, "wall_time": 2, "train_seconds": 1, "actor": 0, "unit_size": 2, "unit": "u0", "job_start": 0, "config": {"lr": 0.01}})" "\n"
        R"({"trial": 1, "budget": 1, "val_accuracy": 0.4, "final": true, "wall_time": 2.1, "train_seconds": 1, "actor": 0, "unit_size": 2, "unit": "u0", "job_start": 0, "config": {"lr": 0.001}})" "\n"
        R"({"trial": 2, "budget": 3, "val_accuracy": 0.6, "final": true, "wall_time": 3, "train_seconds": 2, "actor": 1, "unit_size": 1, "unit": "u1", "job_start": 0.2, "config": {"lr": 0.05}})" "\n"
        R"({"trial": 0, "budget": 3, "val_accuracy": 0.7, "final": true, "wall_time": 4, "train_seconds": 1.5, "actor": 1, "unit_size": 1, "unit": "u2", "job_start": 2.2, "config": {"lr": 0.01}})" "\n"
        // The driver is writing this one: no newline yet.
        R"({"trial": 1, "bud)");
  return out;
}

const json& trial(const json& data, int id) {
  for (const auto& t : data["trials"]) {
    if (t["trial"] == id) return t;
  }
  FAIL("no trial " << id);
  static const json none;
  return none;
}

}  // namespace

TEST_CASE("the report's data: trials, rungs by bracket with promotions, jobs on actors, the best over time") {
  testing::TempDir dir;
  const auto data = report::build_report_data(hand_written_run(dir));
  CHECK(data["name"] == "hand");
  CHECK(data["tuner"] == "hyperband");
  CHECK(data["mode"] == "max");
  CHECK(data["max_budget"] == 9);
  CHECK(data["finished"] == false);
  CHECK(data["reports"] == 5);  // the torn line is left out
  CHECK(data["elapsed"] == 4);
  CHECK(data["space"]["lr"]["type"] == "loguniform");
  // A learning sampler's reasons come from the trial's start job; a random draw has none.
  CHECK(trial(data, 2)["why"]["good"] == json::array({0}));
  CHECK(trial(data, 0)["why"].is_null());

  REQUIRE(data["trials"].size() == 4);
  CHECK(trial(data, 3)["state"] == "failed");
  CHECK(trial(data, 3)["reached"].is_null());
  const auto& t0 = trial(data, 0);
  CHECK(t0["budgets"] == json({1, 3}));
  CHECK(t0["values"] == json({0.5, 0.7}));
  CHECK(t0["wall_times"] == json({2, 4}));
  CHECK(t0["reached"] == 3);
  CHECK(t0["value"] == 0.7);
  CHECK(t0["bracket"] == 1);
  CHECK(t0["jobs"] == 3);
  CHECK(t0["actors"] == json({0, 1}));
  CHECK(t0["state"] == "running");
  CHECK(trial(data, 1)["state"] == "paused");
  CHECK(trial(data, 2)["bracket"] == 3);  // its first job trained to 3, though it reported at 1 on the way
  CHECK(trial(data, 2)["best_value"] == 0.6);

  REQUIRE(data["brackets"].size() == 2);
  const auto& first = data["brackets"][0];
  CHECK(first["start"] == 1);
  REQUIRE(first["rungs"].size() == 3);
  CHECK(first["rungs"][0]["budget"] == 1);
  CHECK(first["rungs"][0]["trials"] == json({0, 1}));
  CHECK(first["rungs"][0]["values"] == json({0.5, 0.4}));
  CHECK(first["rungs"][0]["promoted"] == json({true, false}));
  CHECK(first["rungs"][1]["trials"] == json({0}));
  CHECK(first["rungs"][1]["promoted"] == json({true}));
  CHECK(first["rungs"][2]["budget"] == 9);
  CHECK(first["rungs"][2]["trials"].empty());
  CHECK(first["rungs"][2]["training"] == 1);
  const auto& second = data["brackets"][1];
  CHECK(second["start"] == 3);
  REQUIRE(second["rungs"].size() == 1);
  CHECK(second["rungs"][0]["trials"] == json({2}));
  CHECK(second["rungs"][0]["promoted"] == json({false}));

  // One segment per job: trial 2's two reports are one job; trial 0's two jobs ran on two actors.
  const auto& segments = data["segments"];
  REQUIRE(segments.size() == 4);
  CHECK(segments[0] == json({{"actor", 1}, {"trial", 2}, {"unit", "u1"}, {"unit_size", 1}, {"start", 0.2},
                             {"end", 3}, {"from", 0}, {"to", 3}}));
  CHECK(segments[1]["trial"] == 0);
  CHECK(segments[1]["unit"] == "u0");
  CHECK(segments[1]["unit_size"] == 2);
  CHECK(segments[2]["trial"] == 1);
  CHECK(segments[2]["unit"] == "u0");
  CHECK(segments[3] == json({{"actor", 1}, {"trial", 0}, {"unit", "u2"}, {"unit_size", 1}, {"start", 2.2},
                             {"end", 4}, {"from", 1}, {"to", 3}}));

  const auto& best = data["best_over_time"];
  REQUIRE(best.size() == 4);
  CHECK(best[0]["value"] == 0.3);
  CHECK(best[1]["trial"] == 0);
  CHECK(best[2]["value"] == 0.6);
  CHECK(best[3] == json({{"wall_time", 4}, {"value", 0.7}, {"trial", 0}, {"budget", 3}}));
  // No best.json yet: the best report stands in.
  CHECK(data["best"]["trial"] == 0);
  CHECK(data["best"]["value"] == 0.7);
}

TEST_CASE("the report's data reads results.jsonl alone, from before it had unit and job_start") {
  testing::TempDir dir;
  const auto out = dir.file("old");
  std::filesystem::create_directories(out);
  write(out + "/results.jsonl",
        R"({"trial": 0, "budget": 1, "val_loss": 0.9, "final": true, "wall_time": 5, "train_seconds": 2, "actor": 0, "unit_size": 1, "config": {"lr": 0.1}})" "\n"
        R"({"trial": 1, "budget": 1, "val_loss": 0.5, "final": true, "wall_time": 6, "train_seconds": 4, "actor": 0, "unit_size": 1, "config": {"lr": 0.2}})" "\n"
        R"({"trial": 2, "budget": 1, "val_loss": 0.7, "final": true, "wall_time": 7, "train_seconds": 4, "actor": 0, "unit_size": 1, "config": {"lr": 0.3}})" "\n");
  write(out + "/config.json", R"({"metric": "val_loss", "budget": {"max": 1}})");
  const auto data = report::build_report_data(out);
  CHECK(data["mode"] == "min");  // the default for a loss
  CHECK(data["name"] == "old");
  REQUIRE(data["segments"].size() == 3);
  CHECK(data["segments"][0]["start"] == 3);  // wall_time - train_seconds
  CHECK(data["segments"][0]["unit"] == "");
  CHECK(data["best_over_time"].size() == 2);  // 0.9, then 0.5; 0.7 is no better
  CHECK(data["best"]["value"] == 0.5);
  CHECK(trial(data, 0)["state"] == "finished");
  REQUIRE(data["brackets"].size() == 1);
  CHECK(data["brackets"][0]["rungs"][0]["trials"] == json({0, 1, 2}));
}

TEST_CASE("a directory that is no experiment, or a damaged results line, is an InputError naming it") {
  testing::TempDir dir;
  CHECK_THROWS_AS(report::build_report_data(dir.file("missing")), InputError);
  CHECK_THROWS_WITH(report::build_report_data(dir.path().string()), Catch::Contains("results.jsonl: not there"));
  write(dir.file("results.jsonl"), "{\"trial\": 0, \"budget\": 1}\nnot json\n{\"trial\": 1, \"budget\": 1}\n");
  CHECK_THROWS_WITH(report::build_report_data(dir.path().string()), Catch::Contains("line 2 is not JSON"));
  write(dir.file("results.jsonl"), "{\"trial\": \"zero\", \"budget\": 1}\n");
  CHECK_THROWS_WITH(report::build_report_data(dir.path().string()), Catch::Contains("report 1 has no trial and budget"));
  write(dir.file("results.jsonl"), "");
  write(dir.file("config.json"), "[1, 2]");
  CHECK_THROWS_AS(report::build_report_data(dir.path().string()), InputError);
}

TEST_CASE("the page inlines plotly.js, the script and the data; a config's </script> cannot end the data block") {
  testing::TempDir dir;
  const auto out = dir.file("run");
  std::filesystem::create_directories(out);
  write(out + "/results.jsonl",
        R"({"trial": 0, "budget": 1, "val_accuracy": 0.5, "final": true, "wall_time": 1, "config": {"note": "</script><b>"}})" "\n");
  const auto path = report::write_report(out);
  CHECK(path == out + "/report.html");
  std::ifstream in(path);
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(page.find("plotly.js v") != std::string::npos);
  CHECK(page.find("report-check") != std::string::npos);
  CHECK(page.find(R"(<\/script><b>)") != std::string::npos);
  CHECK(page.find("</script><b>") == std::string::npos);
  CHECK(page.find("http-equiv=\"refresh\"") == std::string::npos);
  CHECK(report::render_page(report::build_report_data(out), true).find("http-equiv=\"refresh\"") != std::string::npos);
  for (const auto& entry : std::filesystem::directory_iterator(out)) {
    CHECK(entry.path().extension() != ".tmp");
  }
  CHECK_THROWS_AS(report::write_report(out, dir.file("no/such/dir/report.html")), InputError);
}

TEST_CASE("the report's data of a population: each exploit and the configs a member trained with") {
  testing::TempDir dir;
  const auto out = dir.file("pbt");
  std::filesystem::create_directories(out);
  write(out + "/results.jsonl",
        R"({"trial": 0, "budget": 1, "val_accuracy": 0.4, "final": true, "wall_time": 1, "train_seconds": 1, "actor": 0, "unit_size": 2, "config": {"lr": 0.1}})" "\n"
        R"({"trial": 1, "budget": 1, "val_accuracy": 0.6, "final": true, "wall_time": 1, "train_seconds": 1, "actor": 0, "unit_size": 2, "config": {"lr": 0.01}})" "\n"
        R"({"trial": 0, "budget": 2, "val_accuracy": 0.7, "final": true, "wall_time": 2, "train_seconds": 1, "actor": 0, "unit_size": 2, "exploit": {"from_trial": 1, "from_budget": 1}, "config": {"lr": 0.012}})" "\n"
        R"({"trial": 1, "budget": 2, "val_accuracy": 0.65, "final": true, "wall_time": 2, "train_seconds": 1, "actor": 0, "unit_size": 2, "config": {"lr": 0.01}})" "\n");
  write(out + "/config.json", R"({"metric": "val_accuracy", "budget": {"max": 2}, "tuner": {"name": "pbt"}})");
  const auto data = report::build_report_data(out);
  const auto& member = trial(data, 0);
  CHECK(member["exploits"] == json::parse(R"([{"budget": 2, "from_trial": 1, "from_budget": 1}])"));
  CHECK(member["schedule"] == json::parse(R"([{"from": 0, "config": {"lr": 0.1}}, {"from": 1, "config": {"lr": 0.012}}])"));
  CHECK(member["config"] == json({{"lr", 0.012}}));  // the config it ended with
  CHECK_FALSE(trial(data, 1).contains("exploits"));  // a donor that never exploited
}

TEST_CASE("without best.json a pbt run's best is the best member at budget.max, as the driver chooses it") {
  testing::TempDir dir;
  const auto out = dir.file("pbt");
  std::filesystem::create_directories(out);
  // Trial 0 peaks at budget 1, before the end; at budget 2, the end, trial 1 is the best member.
  const std::string rows =
      R"({"trial": 0, "budget": 1, "val_accuracy": 0.9, "final": true, "wall_time": 1, "train_seconds": 1, "actor": 0, "config": {"lr": 0.1}})" "\n"
      R"({"trial": 1, "budget": 1, "val_accuracy": 0.6, "final": true, "wall_time": 1, "train_seconds": 1, "actor": 0, "config": {"lr": 0.01}})" "\n"
      R"({"trial": 0, "budget": 2, "val_accuracy": 0.7, "final": true, "wall_time": 2, "train_seconds": 1, "actor": 0, "config": {"lr": 0.1}})" "\n"
      R"({"trial": 1, "budget": 2, "val_accuracy": 0.8, "final": true, "wall_time": 2, "train_seconds": 1, "actor": 0, "config": {"lr": 0.01}})" "\n";
  write(out + "/results.jsonl", rows);
  write(out + "/config.json", R"({"metric": "val_accuracy", "budget": {"max": 2}, "tuner": {"name": "pbt"}})");
  auto data = report::build_report_data(out);
  CHECK(data["best"]["trial"] == 1);
  CHECK(data["best"]["value"] == 0.8);
  CHECK(data["best_over_time"].back()["value"] == 0.9);  // the curve still follows every report

  // Another tuner: the best report at any budget.
  write(out + "/config.json", R"({"metric": "val_accuracy", "budget": {"max": 2}, "tuner": {"name": "random"}})");
  data = report::build_report_data(out);
  CHECK(data["best"]["trial"] == 0);
  CHECK(data["best"]["value"] == 0.9);
}
