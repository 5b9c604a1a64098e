#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <tuple>

#include "packtune/error.hpp"
#include "../tuner_test_support.hpp"
#include "tuners/simulate/synthetic_objective.hpp"

using namespace packtune::tuners;
using namespace packtune::tuners::testing;

namespace {

// A tuner scripted by the test: hands out the listed jobs, then finishes.
class ScriptedTuner : public Tuner {
 public:
  explicit ScriptedTuner(std::vector<Job> jobs, bool stop_on_report = false)
      : jobs_(std::move(jobs)), stop_on_report_(stop_on_report) {}
  Job next_job() override {
    if (next_ < jobs_.size()) {
      ++running_;
      return jobs_[next_++];
    }
    return running_ ? Job::wait() : Job::finished();
  }
  void on_result(TrialId trial, double budget, double) override {
    --running_;
    results.emplace_back(trial, budget);
  }
  Decision on_report(TrialId trial, double budget, double) override {
    reports.emplace_back(trial, budget);
    return stop_on_report_ && trial == 0 && budget >= 2 ? Decision::Stop : Decision::Continue;
  }
  std::string name() const override { return "scripted"; }
  std::vector<std::pair<TrialId, double>> results;
  std::vector<std::pair<TrialId, double>> reports;

 private:
  std::vector<Job> jobs_;
  std::size_t next_ = 0;
  std::int64_t running_ = 0;
  bool stop_on_report_;
};

class WaitingTuner : public Tuner {
 public:
  Job next_job() override { return Job::wait(); }
  void on_result(TrialId, double, double) override {}
  std::string name() const override { return "waiting"; }
};

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = "simulator_test_" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("with one worker every job finishes before the next starts") {
  auto tuner = TunerRegistry::instance().create("asha", make_context(1, 27, 30, Mode::Max));
  SyntheticObjective objective({}, 3, Mode::Max, 27);
  const auto events = simulate(*tuner, objective, Mode::Max, 1);
  REQUIRE(events.size() % 2 == 0);
  double t = 0;
  for (std::size_t i = 0; i < events.size(); i += 2) {
    const auto& start = events[i];
    const auto& result = events[i + 1];
    CHECK(start.kind == SimulationEvent::Kind::Start);
    CHECK(result.kind == SimulationEvent::Kind::Result);
    CHECK(result.trial == start.trial);
    CHECK(result.budget == start.budget);
    CHECK(start.time == Approx(t));
    CHECK(result.time >= start.time);
    t = result.time;
  }
}

TEST_CASE("simulated time charges a job the budget it adds, across workers") {
  ScriptedTuner tuner({Job::start(0, {}, 3), Job::start(1, {}, 1), Job::resume(1, {}, 4),
                       Job::resume(0, {}, 9)});
  auto table = make_table({{0, 1, 0.1}, {1, 1, 0.2}});
  SimulationSummary summary;
  const auto events = simulate(tuner, table, Mode::Max, 2, &summary);
  // t=0: t0 -> 3 and t1 -> 1 start; t=1: t1 done, resumes 1 -> 4 (3 more); t=3: t0 done,
  // resumes 3 -> 9 (6 more); t=4: t1 done; t=9: t0 done.
  std::vector<std::tuple<int, TrialId, double, double>> got;
  for (const auto& e : events) got.emplace_back(e.kind == SimulationEvent::Kind::Start, e.trial, e.budget, e.time);
  CHECK(got == std::vector<std::tuple<int, TrialId, double, double>>{
                   {1, 0, 3, 0}, {1, 1, 1, 0}, {0, 1, 1, 1}, {1, 1, 4, 1}, {0, 0, 3, 3},
                   {1, 0, 9, 3}, {0, 1, 4, 4}, {0, 0, 9, 9}});
  CHECK(summary.time == 9);
  CHECK(summary.total_budget == 13);
  CHECK(summary.trials == 2);
  CHECK(summary.jobs == 4);
  CHECK(summary.best_trial == 0);
  CHECK(summary.best_budget == 9);
}

TEST_CASE("jobs finishing at the same time complete in the order they started") {
  ScriptedTuner tuner({Job::start(0, {}, 2), Job::start(1, {}, 2), Job::start(2, {}, 2)});
  auto table = make_table({{0, 1, 0.1}, {1, 1, 0.2}, {2, 1, 0.3}});
  simulate(tuner, table, Mode::Max, 3);
  CHECK(tuner.results ==
        std::vector<std::pair<TrialId, double>>{{0, 2}, {1, 2}, {2, 2}});
}

TEST_CASE("intermediate reports reach the tuner, and Stop ends a job early") {
  ScriptedTuner tuner({Job::start(0, {}, 5), Job::start(1, {}, 3)}, true);
  auto table = make_table({{0, 1, 0.1}, {1, 1, 0.2}});
  SimulationSummary summary;
  const auto events = simulate(tuner, table, Mode::Max, 1, &summary, 1);
  CHECK(tuner.reports == std::vector<std::pair<TrialId, double>>{{0, 1}, {0, 2}, {1, 1}, {1, 2}});
  CHECK(tuner.results == std::vector<std::pair<TrialId, double>>{{0, 2}, {1, 3}});
  CHECK(summary.stopped == 1);
  CHECK(summary.time == 5);
  REQUIRE(events.size() == 4);
  CHECK(events[1].stopped);
  CHECK(events[1].budget == 2);
}

TEST_CASE("a tuner that misbehaves is reported, not simulated forever") {
  auto table = make_table({{0, 1, 0.1}});
  WaitingTuner waiting;
  CHECK_THAT(error_of([&] { simulate(waiting, table, Mode::Max, 1); }),
             Catch::Contains("waiting") && Catch::Contains("never finish"));
  ScriptedTuner unknown({Job::resume(4, {}, 2)});
  CHECK_THAT(error_of([&] { simulate(unknown, table, Mode::Max, 1); }),
             Catch::Contains("never started"));
  ScriptedTuner shrinking({Job::start(0, {}, 3), Job::resume(0, {}, 2)});
  CHECK_THAT(error_of([&] { simulate(shrinking, table, Mode::Max, 1); }), Catch::Contains("below"));
  ScriptedTuner ok({Job::start(0, {}, 1)});
  CHECK_THROWS_AS(Simulator(ok, table, Mode::Max, SimulationOptions{0, 0}), packtune::InputError);
  CHECK_THROWS_AS(Simulator(ok, table, Mode::Max, SimulationOptions{1, -1}), packtune::InputError);
}

TEST_CASE("a table answers with the row at the largest budget reached") {
  auto table = make_table({{0, 1, 0.5}, {0, 3, 0.6}, {1, 2, 0.7}, {1, 1, 0.4}});
  CHECK(table.trials() == 2);
  CHECK(table.evaluate(0, {}, 1) == 0.5);
  CHECK(table.evaluate(0, {}, 2.5) == 0.5);
  CHECK(table.evaluate(0, {}, 3) == 0.6);
  CHECK(table.evaluate(0, {}, 2.9999999999999996) == 0.6);
  CHECK(table.evaluate(0, {}, 100) == 0.6);
  CHECK(table.evaluate(1, {}, 1.5) == 0.4);
  CHECK_THAT(error_of([&] { table.evaluate(0, {}, 0.5); }),
             Catch::Contains("trial 0") && Catch::Contains("no row at budget 0.5"));
  CHECK_THAT(error_of([&] { table.evaluate(2, {}, 1); }),
             Catch::Contains("created trial 2") && Catch::Contains("--trials 2"));
}

TEST_CASE("malformed or missing tables are input errors with file and line") {
  const auto parse = [](const std::string& csv) {
    return error_of([&] {
      std::stringstream in(csv);
      TableObjective::from_stream(in, "t.csv");
    });
  };
  CHECK(parse("trial,budget,metric\n0,1,0.5\n# comment\n\n1,1,nan\n") == "no error");
  CHECK(parse("0,1,0.5\n") == "no error");
  CHECK_THAT(parse("trial,budget,metric\n0,1\n"),
             Catch::Contains("t.csv:2") && Catch::Contains("3 comma-separated fields"));
  CHECK_THAT(parse("0,1,0.5,7\n"), Catch::Contains("t.csv:1") && Catch::Contains("got 4"));
  CHECK_THAT(parse("x,1,0.5\n"), Catch::Contains("t.csv:1: trial"));
  CHECK_THAT(parse("-1,1,0.5\n"), Catch::Contains("trial"));
  CHECK_THAT(parse("0,0,0.5\n"), Catch::Contains("budget") && Catch::Contains("positive"));
  CHECK_THAT(parse("0,1,abc\n"), Catch::Contains("metric"));
  CHECK_THAT(parse("0,1,0.5\n0,1,0.6\n"), Catch::Contains("two rows at budget 1"));
  CHECK_THAT(parse("1,1,0.5\n"), Catch::Contains("trial 0 has no rows"));
  CHECK_THAT(parse(""), Catch::Contains("no rows"));
  CHECK_THAT(parse("trial,budget,metric\n"), Catch::Contains("no rows"));

  CHECK_THAT(error_of([] { TableObjective::from_file("/nonexistent/table.csv"); }),
             Catch::Contains("table:/nonexistent/table.csv") && Catch::Contains("cannot open"));
  CHECK_THAT(error_of([] { make_objective("table:", make_context(1, 2, 1)); }),
             Catch::Contains("--objective"));
  CHECK_THAT(error_of([] { make_objective("gaussian", make_context(1, 2, 1)); }),
             Catch::Contains("--objective") && Catch::Contains("synthetic"));
  const auto path = write_file("good.csv", "trial,budget,metric\n0,1,0.25\n");
  auto objective = make_objective("table:" + path, make_context(1, 2, 1));
  CHECK(objective->evaluate(0, {}, 1) == 0.25);
  std::remove(path.c_str());
}

TEST_CASE("synthetic curves are deterministic, seed-dependent and improve with budget") {
  const auto space = SearchSpace::from_json(
      nlohmann::json::parse(R"({"lr": {"type": "loguniform", "low": 1e-4, "high": 1e-1}})"));
  SyntheticObjective a(space, 7, Mode::Min, 81);
  SyntheticObjective b(space, 7, Mode::Min, 81);
  SyntheticObjective other(space, 8, Mode::Min, 81);
  SyntheticObjective accuracy(space, 7, Mode::Max, 81);
  const TrialConfig config{{"lr", 0.01}};
  CHECK(a.evaluate(3, config, 9) == b.evaluate(3, config, 9));
  CHECK(a.evaluate(3, config, 9) != other.evaluate(3, config, 9));
  CHECK(accuracy.evaluate(3, config, 9) == Approx(1 - a.evaluate(3, config, 9)));
  // Order of evaluation does not matter.
  const double first = a.evaluate(5, config, 27);
  a.evaluate(6, config, 3);
  CHECK(a.evaluate(5, config, 27) == first);
  int improved = 0;
  for (int t = 0; t < 50; ++t) {
    CHECK(a.asymptote(t, config) >= 0.05);
    CHECK(a.asymptote(t, config) <= 0.5);
    improved += a.evaluate(t, config, 81) < a.evaluate(t, config, 1);
    CHECK(std::abs(a.evaluate(t, config, 81) - a.asymptote(t, config)) < 0.1);
  }
  CHECK(improved >= 48);
  // The config matters: the asymptote is not the same everywhere in the space.
  CHECK(a.asymptote(0, {{"lr", 1e-4}}) != a.asymptote(0, {{"lr", 0.1}}));
}

TEST_CASE("ASHA finds better-than-median trials on the synthetic objective") {
  auto context = make_context(1, 81, 300, Mode::Min);
  auto tuner = TunerRegistry::instance().create("asha", context);
  SyntheticObjective objective(context.space, 0, Mode::Min, 81);
  SimulationSummary summary;
  simulate(*tuner, objective, Mode::Min, 8, &summary);
  CHECK(summary.trials == 300);
  CHECK(summary.best_budget == 81);
  // The best of 300 random asymptotes in [0.05, 0.5] is well below the middle of the range.
  CHECK(summary.best_metric < 0.2);
}

namespace {

// A table's metrics with a cost per job: `seconds_per_budget` for each budget unit trained, or
// a fixed cost per trial where `fixed` has one. Records the spans it was asked about.
class CostlyTable : public Objective {
 public:
  CostlyTable(TableObjective table, double seconds_per_budget, std::map<std::int64_t, double> fixed = {})
      : table_(std::move(table)), seconds_per_budget_(seconds_per_budget), fixed_(std::move(fixed)) {}
  double evaluate(std::int64_t index, const TrialConfig& config, double budget) override {
    return table_.evaluate(index, config, budget);
  }
  Evaluation evaluate_from(std::int64_t index, const TrialConfig& config, double from, double budget) override {
    spans.emplace_back(index, from, budget);
    const auto fixed = fixed_.find(index);
    return {evaluate(index, config, budget),
            fixed != fixed_.end() ? fixed->second : seconds_per_budget_ * (budget - from)};
  }
  std::string description() const override { return "costly"; }
  std::vector<std::tuple<std::int64_t, double, double>> spans;  // index, from, budget

 private:
  TableObjective table_;
  double seconds_per_budget_;
  std::map<std::int64_t, double> fixed_;
};

std::vector<std::tuple<int, TrialId, double, double>> timeline(const std::vector<SimulationEvent>& events) {
  std::vector<std::tuple<int, TrialId, double, double>> got;
  for (const auto& e : events) got.emplace_back(e.kind == SimulationEvent::Kind::Start, e.trial, e.budget, e.time);
  return got;
}

}  // namespace

TEST_CASE("a job takes the time its objective's cost says, not the budget it adds") {
  const auto jobs = std::vector<Job>{Job::start(0, {}, 3), Job::start(1, {}, 1), Job::resume(1, {}, 4),
                                     Job::resume(0, {}, 9)};
  ScriptedTuner tuner(jobs);
  CostlyTable objective(make_table({{0, 1, 0.1}, {1, 1, 0.2}}), 10);
  SimulationSummary summary;
  const auto events = simulate(tuner, objective, Mode::Max, 2, &summary);
  // The schedule of "simulated time charges a job the budget it adds", ten times as long.
  CHECK(timeline(events) == std::vector<std::tuple<int, TrialId, double, double>>{
                                {1, 0, 3, 0}, {1, 1, 1, 0}, {0, 1, 1, 10}, {1, 1, 4, 10}, {0, 0, 3, 30},
                                {1, 0, 9, 30}, {0, 1, 4, 40}, {0, 0, 9, 90}});
  CHECK(summary.time == 90);
  CHECK(summary.total_budget == 13);
  // Each job is asked about once, from the budget its trial had reached.
  CHECK(objective.spans == std::vector<std::tuple<std::int64_t, double, double>>{
                               {0, 0, 3}, {1, 0, 1}, {1, 1, 4}, {0, 3, 9}});

  // Costs that do not follow the budget reorder the jobs: trial 1 is slow, trial 0 cheap.
  ScriptedTuner reordered({Job::start(0, {}, 3), Job::start(1, {}, 1), Job::resume(0, {}, 9)});
  CostlyTable uneven(make_table({{0, 1, 0.1}, {1, 1, 0.2}}), 0, {{0, 1}, {1, 100}});
  const auto uneven_events = simulate(reordered, uneven, Mode::Max, 2, &summary);
  CHECK(timeline(uneven_events) == std::vector<std::tuple<int, TrialId, double, double>>{
                                       {1, 0, 3, 0}, {1, 1, 1, 0}, {0, 0, 3, 1}, {1, 0, 9, 1}, {0, 0, 9, 2},
                                       {0, 1, 1, 100}});
  CHECK(summary.time == 100);
}

TEST_CASE("with a cost, intermediate reports are spread over the job in proportion to budget") {
  // Trial 0 is stopped at its report at budget 2, half way through a job of cost 100.
  ScriptedTuner tuner({Job::start(0, {}, 4), Job::start(1, {}, 3)}, true);
  CostlyTable objective(make_table({{0, 1, 0.1}, {1, 1, 0.2}}), 0, {{0, 100}, {1, 30}});
  SimulationSummary summary;
  const auto events = simulate(tuner, objective, Mode::Max, 1, &summary, 1);
  CHECK(timeline(events) == std::vector<std::tuple<int, TrialId, double, double>>{
                                {1, 0, 4, 0}, {0, 0, 2, 50}, {1, 1, 3, 50}, {0, 1, 3, 80}});
  CHECK(events[1].stopped);
  CHECK(tuner.reports == std::vector<std::pair<TrialId, double>>{{0, 1}, {0, 2}, {1, 1}, {1, 2}});
  // The final budget is asked for when the job starts, each report when it is due.
  CHECK(objective.spans == std::vector<std::tuple<std::int64_t, double, double>>{
                               {0, 0, 4}, {0, 0, 1}, {0, 0, 2}, {1, 0, 3}, {1, 0, 1}, {1, 0, 2}});
}

TEST_CASE("a cost that is negative or not finite stops the simulation naming the objective") {
  for (const double cost : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    ScriptedTuner tuner({Job::start(0, {}, 1)});
    CostlyTable objective(make_table({{0, 1, 0.1}}), 0, {{0, cost}});
    CHECK_THAT(error_of([&] { simulate(tuner, objective, Mode::Max, 1); }),
               Catch::Contains("objective costly") && Catch::Contains("trial 0") && Catch::Contains(">= 0"));
  }
}
