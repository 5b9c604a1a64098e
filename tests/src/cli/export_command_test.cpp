#include <catch2/catch.hpp>

#include <sstream>

#include "cli/export_command.hpp"
#include "packtune/error.hpp"

using packtune::cli::write_results_csv;

namespace {

std::string csv_of(const std::string& jsonl) {
  std::istringstream in(jsonl);
  std::ostringstream out;
  write_results_csv(in, "results.jsonl", out);
  return out.str();
}

}  // namespace

TEST_CASE("each report is a row; metrics and the flattened config are columns") {
  const std::string jsonl =
      R"({"actor":0,"budget":0.5,"config":{"lr":0.001,"opt":{"name":"adam","betas":[0.9,0.99]}},"final":false,)"
      R"("train_seconds":1.5,"trial":0,"unit_size":2,"val_accuracy":0.75,"val_loss":0.5,"wall_time":3.25})"
      "\n"
      R"({"actor":1,"budget":1,"config":{"lr":0.01,"note":"a, \"quoted\"\nline"},"final":true,)"
      R"("train_seconds":2,"trial":1,"unit_size":1,"val_accuracy":null,"val_loss":0.25,"wall_time":4})"
      "\n";
  CHECK(csv_of(jsonl) ==
        "trial,budget,final,wall_time,train_seconds,actor,unit_size,val_accuracy,val_loss,config.lr,"
        "config.opt.betas,config.opt.name,config.note\r\n"
        "0,0.5,false,3.25,1.5,0,2,0.75,0.5,0.001,\"[0.9,0.99]\",adam,\r\n"
        "1,1,true,4,2,1,1,,0.25,0.01,,,\"a, \"\"quoted\"\"\nline\"\r\n");
}

TEST_CASE("an empty results file is a header alone; a line that is not a report names its number") {
  CHECK(csv_of("") == "trial,budget,final,wall_time,train_seconds,actor,unit_size\r\n");
  try {
    csv_of("{\"trial\":0,\"budget\":1}\n{\"trial\": 1, \"budget\"\n");
    FAIL("no error");
  } catch (const packtune::InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("results.jsonl: line 2"));
  }
  CHECK_THROWS_AS(csv_of("[1, 2]\n"), packtune::InputError);
}

TEST_CASE("a column is a metric or a field by the first row that has it, once, whatever a later row holds") {
  CHECK(csv_of("{\"trial\":0,\"budget\":1,\"val_accuracy\":0.5}\n"
               "{\"trial\":1,\"budget\":1,\"val_accuracy\":\"oops\"}\n") ==
        "trial,budget,final,wall_time,train_seconds,actor,unit_size,val_accuracy\r\n"
        "0,1,,,,,,0.5\r\n"
        "1,1,,,,,,oops\r\n");
}

TEST_CASE("a torn last line (no newline: being written, or cut by a crash) is left out, as report does") {
  const std::string whole = "{\"trial\":0,\"budget\":1}\n";
  CHECK(csv_of(whole + "{\"trial\": 1, \"bud") == csv_of(whole));
  // The same bytes followed by a newline are damage, not a write in progress.
  CHECK_THROWS_AS(csv_of(whole + "{\"trial\": 1, \"bud\n"), packtune::InputError);
}

TEST_CASE("population-based training's lineage is two columns, empty on the rows without an exploit") {
  const std::string jsonl =
      R"({"actor":0,"budget":1,"config":{"lr":0.1},"final":true,"train_seconds":1,"trial":0,"unit_size":2,)"
      R"("val_accuracy":0.5,"wall_time":1})"
      "\n"
      R"({"actor":0,"budget":2,"config":{"lr":0.08},"exploit":{"from_budget":1,"from_trial":1},"final":true,)"
      R"("train_seconds":1,"trial":0,"unit_size":2,"val_accuracy":0.7,"wall_time":2})"
      "\n";
  CHECK(csv_of(jsonl) ==
        "trial,budget,final,wall_time,train_seconds,actor,unit_size,exploit.from_budget,exploit.from_trial,"
        "val_accuracy,config.lr\r\n"
        "0,1,true,1,1,0,2,,,0.5,0.1\r\n"
        "0,2,true,2,1,0,2,1,1,0.7,0.08\r\n");
}
