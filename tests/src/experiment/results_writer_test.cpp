#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "../../temp_dir.hpp"
#include "packtune/error.hpp"
#include "experiment/results_folder.hpp"
#include "experiment/results_writer.hpp"

using namespace packtune;

TEST_CASE("results.jsonl gets one object per report and best.json the best value") {
  testing::TempDir dir;
  const auto out = dir.file("run");
  ResultsWriter::check_fresh(out);
  {
    ResultsWriter w(out, nlohmann::json{{"seed", 1}}, "val_loss", tuners::Mode::Min);
    w.write({0, 0.5, {{"val_loss", 0.9}, {"val_accuracy", 0.6}}, false, 1.0, 0.5, 0}, {{"lr", 0.1}});
    w.write({1, 1.0, {{"val_loss", 0.4}}, true, 2.0, 1.5, 1, 8}, {{"lr", 0.01}});
    w.write({0, 1.0, {{"val_loss", std::nan("")}}, true, 3.0, 1.0, 0}, {{"lr", 0.1}});
    w.write_best();
    CHECK(w.rows() == 3);
  }
  std::ifstream in(out + "/results.jsonl");
  std::string line;
  std::vector<nlohmann::json> rows;
  while (std::getline(in, line)) rows.push_back(nlohmann::json::parse(line));
  REQUIRE(rows.size() == 3);
  CHECK(rows[0]["trial"] == 0);
  CHECK(rows[0]["budget"] == 0.5);
  CHECK(rows[0]["val_accuracy"] == 0.6);
  CHECK(rows[1]["actor"] == 1);
  CHECK(rows[1]["unit_size"] == 8);
  CHECK(rows[0]["unit_size"] == 1);
  CHECK(rows[1]["config"]["lr"] == 0.01);
  CHECK(rows[2]["val_loss"].is_null());
  auto best = nlohmann::json::parse(std::ifstream(out + "/best.json"));
  CHECK(best["trial"] == 1);
  CHECK(best["metric"] == "val_loss");
  CHECK(best["value"] == 0.4);
  CHECK(best["config"]["lr"] == 0.01);
  CHECK_THROWS_AS(ResultsWriter::check_fresh(out), InputError);
}

TEST_CASE("a new run refuses a folder holding anything a run writes, a link to nothing too, and takes others") {
  namespace fs = std::filesystem;
  testing::TempDir dir;
  const auto out = dir.file("run");
  fs::create_directories(out);
  std::ofstream(out + "/notes.txt") << "mine\n";
  ResultsWriter::check_fresh(out);  // a file of another name
  CHECK_FALSE(ResultsWriter::occupied_by(out));
  CHECK(fs::exists(out + "/notes.txt"));
  for (const auto view : results_folder::kAll) {
    const std::string name(view);
    const auto path = out + "/" + name;
    std::ofstream(path) << "x\n";
    CHECK_THROWS_WITH(ResultsWriter::check_fresh(out), Catch::Contains("already holds") && Catch::Contains(name));
    fs::remove(path);
    fs::create_symlink(dir.file("nowhere"), path);  // dangling: the run would write through it
    CHECK(ResultsWriter::occupied_by(out) == name);
    fs::remove(path);
  }
  // An earlier run's journal, even without its results.jsonl: --resume is the way on.
  std::ofstream(out + "/journal.jsonl") << "{}\n";
  std::ofstream(out + "/config.json") << "{}\n";
  CHECK_THROWS_WITH(ResultsWriter::check_fresh(out),
                    Catch::Contains("already holds an earlier run (journal.jsonl)") && Catch::Contains("--resume"));
}

TEST_CASE("a new run's folder: the outermost folder made for it, and only empty ones removed again") {
  namespace fs = std::filesystem;
  testing::TempDir dir;
  CHECK(ResultsWriter::create_folder(dir.file("")).empty());  // there already
  const auto made = ResultsWriter::create_folder(dir.file("a/b/c/"));
  CHECK(fs::path(made) == fs::absolute(dir.file("a")).lexically_normal());
  CHECK(fs::is_directory(dir.file("a/b/c")));
  std::ofstream(dir.file("a/mine.txt")) << "x\n";  // came into a meanwhile: a stays
  ResultsWriter::remove_made_folders(dir.file("a/b/c/"), made);
  CHECK_FALSE(fs::exists(dir.file("a/b")));
  CHECK(fs::exists(dir.file("a/mine.txt")));
  fs::remove(dir.file("a/mine.txt"));
  ResultsWriter::create_folder(dir.file("a/b"));
  ResultsWriter::remove_made_folders(dir.file("a/b"), made);
  CHECK_FALSE(fs::exists(dir.file("a")));
  CHECK(fs::is_directory(dir.file("")));  // never past the outermost made
  ResultsWriter::remove_made_folders(dir.file(""), "");  // nothing made: nothing removed
  CHECK(fs::is_directory(dir.file("")));
}

TEST_CASE("with a final budget (pbt) the best is the best report there, once one reaches it") {
  testing::TempDir dir;
  const auto out = dir.file("run");
  const auto report = [](tuners::TrialId trial, double budget, double accuracy) {
    ReportRow row{trial, budget, {{"val_accuracy", accuracy}}};
    return std::make_pair(row, tuners::TrialConfig{{"lr", 0.1 * static_cast<double>(trial + 1)}});
  };
  // Trial 0 peaks at budget 2, then an exploit replaces its weights; at budget 4, the end,
  // trial 2 is the best member of the population.
  const std::vector reports{report(0, 2, 0.90), report(1, 2, 0.70), report(2, 4, 0.85),
                            report(0, 4, 0.80), report(1, 4, 0.86), report(1, 4, 0.84)};
  std::vector<nlohmann::json> rows;
  ResultsWriter w(out, nlohmann::json{{"seed", 1}}, "val_accuracy", tuners::Mode::Max, 4.0);
  const auto append = [&](std::size_t r) {
    rows.push_back(nlohmann::json::parse(w.append(reports[r].first, reports[r].second)));
  };
  append(0);
  append(1);
  REQUIRE(w.best());
  CHECK(w.best()->trial == 0);  // nothing at the final budget yet: the best at any budget
  CHECK(w.best()->config.at("lr") == tuners::ParamValue(0.1));
  for (std::size_t r = 2; r < reports.size(); ++r) append(r);
  CHECK(w.best()->trial == 1);
  CHECK(w.best()->value == 0.86);
  CHECK(w.best()->budget == 4.0);

  // A resume replays the rows to the same best; without a final budget trial 0's 0.90 wins.
  w.flush();
  const ResultsWriter resumed(out, rows, "val_accuracy", tuners::Mode::Max, 4.0);
  CHECK(resumed.best()->trial == 1);
  const ResultsWriter any_budget(out, rows, "val_accuracy", tuners::Mode::Max);
  CHECK(any_budget.best()->trial == 0);
}

// The row as the driver wrote it before util::JsonObjectText: an nlohmann::json object, dumped.
// resume rewrites results.jsonl from the journal's rows through nlohmann::json, so a row's
// bytes must be what dump() gives.
TEST_CASE("a results row is the bytes nlohmann::json's dump() gives the same object (random rows)") {
  std::mt19937_64 rng(7);
  const auto pick = [&rng](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  const auto number = [&rng, &pick]() {
    const double values[] = {std::nan(""), 0.0, -0.0, 1.0, 3.0, 0.1, 1e-7, 12345.678, -2.5e300};
    return pick(3) == 0 ? values[pick(9)] : std::uniform_real_distribution<double>(-1, 1)(rng);
  };
  for (int round = 0; round < 500; ++round) {
    ReportRow row{pick(100000), number()};
    const std::vector<std::string> names{"val_loss", "val_accuracy", "loss", "a_metric", "zeta", "train_seconds"};
    for (int m = pick(4); m > 0; --m) row.metrics[names[static_cast<std::size_t>(pick(6))]] = number();
    row.final = pick(2) == 1;
    row.wall_time = number();
    row.train_seconds = number();
    row.actor = pick(2000) - 1;
    row.unit_size = 1 + pick(32);
    if (pick(2)) row.unit = "u" + std::to_string(pick(500));
    if (pick(2)) row.job_start = std::abs(number());
    if (pick(3) == 0) {
      row.exploited_from = pick(100);
      row.exploited_at = number();
    }
    tuners::TrialConfig config;
    for (int c = pick(8); c > 0; --c) {
      const auto key = std::string(1, static_cast<char>('a' + pick(12))) + (pick(2) ? "_rate" : "");
      switch (pick(4)) {
        case 0: config[key] = pick(2) == 1; break;
        case 1: config[key] = static_cast<std::int64_t>(pick(1 << 20)) - 1000; break;
        case 2: config[key] = number(); break;
        default: config[key] = std::string(pick(2) ? "adam" : "path/with \"quotes\"\n");
      }
    }
    nlohmann::json line;
    line["trial"] = row.trial;
    line["budget"] = row.budget;
    for (const auto& [name, value] : row.metrics) line[name] = std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
    line["final"] = row.final;
    line["wall_time"] = row.wall_time;
    line["train_seconds"] = row.train_seconds;
    line["actor"] = row.actor;
    line["unit_size"] = row.unit_size;
    if (!row.unit.empty()) line["unit"] = row.unit;
    if (row.job_start >= 0) line["job_start"] = row.job_start;
    if (row.exploited_from >= 0) line["exploit"] = {{"from_trial", row.exploited_from}, {"from_budget", row.exploited_at}};
    line["config"] = tuners::to_json(config);
    INFO("round " << round);
    REQUIRE(ResultsWriter::line(row, config) == line.dump());
    REQUIRE(ResultsWriter::config_text(config) == tuners::to_json(config).dump());
  }
}
