#include <catch2/catch.hpp>

#include <fstream>

#include "../../temp_dir.hpp"
#include "packtune/error.hpp"
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
