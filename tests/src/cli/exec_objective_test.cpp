#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <tuple>

#include "../../file_bytes.hpp"
#include "../../reaped.hpp"
#include "../../temp_dir.hpp"
#include "../../tuners/tuner_test_support.hpp"
#include "cli/exec_objective.hpp"
#include "packtune/error.hpp"

using namespace packtune;
using cli::ExecObjective;
using testing::read_file;
using testing::reaped_and_gone;
using tuners::testing::make_context;

namespace {

// Long enough that nothing but a command that never answers reaches it, however loaded the
// machine: no test here waits for it to pass.
constexpr double kPatience = 600;

// Debian's Python, as the CLI tests use (a venv's python3 may be first on PATH).
std::string python() {
  const char* chosen = std::getenv("PACKTUNE_TEST_PYTHON");
  return chosen != nullptr ? chosen : "/usr/bin/python3";
}

using Timeline = std::vector<std::tuple<int, tuners::TrialId, double, double, double, bool, bool>>;

Timeline timeline(const std::vector<tuners::SimulationEvent>& events) {
  Timeline out;
  for (const auto& e : events) {
    out.emplace_back(e.kind == tuners::SimulationEvent::Kind::Start, e.trial, e.budget, e.metric, e.time, e.resume,
                     e.stopped);
  }
  return out;
}

Timeline simulate_asha(tuners::Objective& objective, tuners::SimulationSummary* summary = nullptr) {
  auto tuner = tuners::TunerRegistry::instance().create("asha", make_context(1, 4, 8, tuners::Mode::Max, {{"eta", 2}}));
  return timeline(tuners::testing::simulate(*tuner, objective, tuners::Mode::Max, 3, summary, 1));
}

// What stopping on a command's fault says, and whether it called it bad input.
struct Failure {
  std::string message = "no error";
  bool input_error = false;
};

Failure failure_of(const std::string& command, int evaluations = 1, double timeout = kPatience) {
  Failure f;
  try {
    ExecObjective objective(command, timeout);
    for (int i = 0; i < evaluations; ++i) objective.evaluate_from(i, {{"lr", 0.01}}, 0, 1);
  } catch (const InputError& e) {
    f = {e.what(), true};
  } catch (const Error& e) {
    f = {e.what(), false};
  }
  return f;
}

}  // namespace

TEST_CASE("simulate exec: a command answering from a table runs as the table does, in its time") {
  testing::TempDir dir;
  std::ostringstream csv;
  for (int trial = 0; trial < 8; ++trial) {
    for (const int budget : {1, 2, 4}) csv << trial << "," << budget << "," << (trial * 37 % 11) * 0.07 + budget * 0.01 << "\n";
  }
  std::ofstream(dir.file("table.csv")) << csv.str();
  const auto surrogate =
      python() + " '" + PACKTUNE_TABLE_SURROGATE + "' '" + dir.file("table.csv") + "'";

  auto table = tuners::TableObjective::from_file(dir.file("table.csv"));
  tuners::SimulationSummary by_table;
  const auto expected = simulate_asha(table, &by_table);
  REQUIRE(by_table.jobs > by_table.trials);  // promotions, intermediate reports: not a trivial run

  SECTION("without a cost a job takes the budget it adds, as with the table") {
    ExecObjective objective(surrogate, kPatience);
    tuners::SimulationSummary summary;
    CHECK(simulate_asha(objective, &summary) == expected);
    CHECK(summary.time == by_table.time);
    CHECK(objective.description() == "exec:" + surrogate);
  }
  SECTION("with a cost of 10 s per budget every event comes 10 times as late") {
    ExecObjective objective(surrogate + " 10", kPatience);
    tuners::SimulationSummary summary;
    const auto got = simulate_asha(objective, &summary);
    Timeline scaled;
    for (auto e : expected) {
      std::get<4>(e) *= 10;
      scaled.push_back(e);
    }
    CHECK(got == scaled);
    CHECK(summary.time == 10 * by_table.time);
    CHECK(summary.total_budget == by_table.total_budget);
  }
}

TEST_CASE("simulate exec: each request is one JSON line, and the command is awaited at the end and reaped") {
  testing::TempDir dir;
  const auto requests = dir.file("requests");
  const auto pid_file = dir.file("pid");
  pid_t pid = -1;
  {
    ExecObjective objective("echo $$ > " + pid_file + "; exec " + python() +
                                " -c 'import sys\nfor line in sys.stdin:\n"
                                "    open(\"" + requests + "\", \"a\").write(line)\n"
                                "    print(\"{\\\"metric\\\": 0.25, \\\"cost\\\": 7}\", flush=True)'",
                            kPatience);
    const auto first = objective.evaluate_from(2, {{"lr", 0.01}, {"optimizer", std::string("adam")}}, 1, 2.5);
    CHECK(first.metric == 0.25);
    CHECK(first.cost == 7.0);
    CHECK(objective.evaluate(0, {}, 3) == 0.25);
    pid = std::stoi(read_file(pid_file));
  }
  CHECK(read_file(requests) ==
        "{\"trial\":2,\"config\":{\"lr\":0.01,\"optimizer\":\"adam\"},\"budget\":2.5,\"from\":1}\n"
        "{\"trial\":0,\"config\":{},\"budget\":3,\"from\":0}\n");
  CHECK(reaped_and_gone(pid));
}

TEST_CASE("simulate exec: a command that fails stops the run with one line naming it, not as bad input") {
  const auto check = [](const Failure& f, const std::string& command, const std::string& what) {
    INFO(f.message);
    CHECK_FALSE(f.input_error);
    CHECK_THAT(f.message, Catch::StartsWith("--objective exec:" + command + ": trial "));
    CHECK_THAT(f.message, Catch::Contains(what));
    CHECK(f.message.find('\n') == std::string::npos);
  };
  check(failure_of("exit 3"), "exit 3", "trial 0 at budget 1: its output ended before an answer: it exited with status 3");
  // The shell that cannot find a program says so on stderr and exits 127.
  check(failure_of("/nonexistent/surrogate"), "/nonexistent/surrogate", "it exited with status 127");
  check(failure_of("kill -9 $$"), "kill -9 $$", "it was killed by signal 9");
  const std::string one_answer = "read l; echo '{\"metric\": 0.5}'";
  check(failure_of(one_answer, 2), one_answer, "trial 1 at budget 1: its output ended before an answer: it exited with status 0");
  const std::string words = "read l; echo hello; cat > /dev/null";
  check(failure_of(words), words, "its answer is not a JSON object: \"hello\"");
  check(failure_of("read l; echo '[0.5]'"), "read l; echo '[0.5]'", "not a JSON object");
  check(failure_of("read l; echo '{\"cost\": 1}'"), "read l; echo '{\"cost\": 1}'", "no finite number \"metric\"");
  check(failure_of("read l; echo '{\"metric\": \"high\"}'"), "read l; echo '{\"metric\": \"high\"}'",
        "no finite number \"metric\"");
  for (const std::string cost : {"-1", "\"soon\"", "null"}) {
    const auto command = "read l; echo '{\"metric\": 0.5, \"cost\": " + cost + "}'";
    check(failure_of(command), command, "its \"cost\" is not a number of seconds >= 0");
  }
  // Bad input is the option's, not the command's.
  const auto empty = failure_of(" ");
  CHECK(empty.input_error);
  CHECK_THAT(empty.message, Catch::Contains("exec:CMD"));
}

TEST_CASE("simulate exec: a command that never answers times out and is killed and reaped") {
  testing::TempDir dir;
  const auto pid_file = dir.file("pid");
  // It never answers, so the timeout fires however fast or slow anything runs. Its pid file is
  // renamed into place whole; a kill that came before leaves none, and then no pid to look for.
  const auto command = "echo $$ > " + pid_file + ".new; mv " + pid_file + ".new " + pid_file + "; exec sleep 1000";
  const auto f = failure_of(command, 1, 0.5);
  CHECK_FALSE(f.input_error);
  CHECK_THAT(f.message, Catch::StartsWith("--objective exec:echo $$") &&
                            Catch::Contains("trial 0 at budget 1: no answer within 0.5 s (--objective-timeout)"));
  pid_t pid = -1;
  if (std::ifstream(pid_file) >> pid) CHECK(reaped_and_gone(pid));
}

TEST_CASE("simulate exec: what the command started is killed and reaped at the end, even what called setsid") {
  testing::TempDir dir;
  const auto pid_file = dir.file("pid");
  {
    // Its own session and process group: out of reach of a kill of the command's group.
    ExecObjective objective("setsid sleep 1000 & echo $! > " + pid_file + "; exec " + python() +
                                " -c 'import sys\nfor line in sys.stdin:\n"
                                "    print(\"{\\\"metric\\\": 0.5}\", flush=True)'",
                            kPatience);
    CHECK(objective.evaluate(0, {}, 1) == 0.5);
  }
  const pid_t escaped = std::stoi(read_file(pid_file));
  const bool gone = ::kill(escaped, 0) == -1 && errno == ESRCH;
  if (!gone) ::kill(escaped, SIGKILL);
  CHECK(gone);
}

TEST_CASE("simulate exec: a command that exits while what it started holds its output has exited, with its status") {
  testing::TempDir dir;
  const auto pid_file = dir.file("pid");
  // The sleep holds the command's stdout; the command's exit must still end the answer.
  const auto command = "setsid sleep 1000 & echo $! > " + pid_file + "; read l; exit 3";
  const auto f = failure_of(command);
  const pid_t escaped = std::stoi(read_file(pid_file));
  const bool gone = ::kill(escaped, 0) == -1 && errno == ESRCH;
  if (!gone) ::kill(escaped, SIGKILL);
  CHECK_FALSE(f.input_error);
  CHECK_THAT(f.message, Catch::Contains("trial 0 at budget 1: its output ended before an answer: it exited with status 3"));
  CHECK(gone);
}
