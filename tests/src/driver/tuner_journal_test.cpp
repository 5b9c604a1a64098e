#include <catch2/catch.hpp>

#include <random>
#include <set>
#include <tuple>

#include "../../temp_dir.hpp"
#include "../../tuners/tuner_test_support.hpp"
#include "driver/tuner_journal.hpp"
#include "packtune/error.hpp"

using namespace packtune;
using tuners::Job;
using tuners::testing::HashObjective;
using tuners::testing::make_context;

namespace {

using Result = std::tuple<tuners::TrialId, double, double>;  // trial, budget, metric

// Runs a tuner to the end on `slots` workers, from the jobs `running` already holds; results
// arrive in an order drawn from `order_seed`, each a pure function of (trial, budget).
std::vector<Result> run_to_end(TunerJournal& tuning, std::vector<Job> running, int slots, unsigned order_seed) {
  HashObjective objective(5);
  std::mt19937 rng(order_seed);
  std::vector<Result> results;
  while (true) {
    bool finished = false;
    while (static_cast<int>(running.size()) < slots) {
      Job job = tuning.next_job();
      if (job.kind == Job::Kind::Start || job.kind == Job::Kind::Resume) {
        running.push_back(job);
        continue;
      }
      finished = job.kind == Job::Kind::Finished;
      break;
    }
    if (running.empty()) {
      REQUIRE(finished);
      return results;
    }
    const auto pick = rng() % running.size();
    const Job job = running[pick];
    running.erase(running.begin() + static_cast<long>(pick));
    const double metric = objective.evaluate(job.trial, job.config, job.budget);
    ReportRow row;
    row.trial = job.trial;
    row.budget = job.budget;
    row.wall_time = 1.0 * static_cast<double>(results.size());
    tuning.on_result(job.trial, job.budget, metric, ResultsWriter::Row{row, std::make_shared<const tuners::TrialConfig>()}, false);
    results.emplace_back(job.trial, job.budget, metric);
  }
}

std::set<Result> as_set(const std::vector<Result>& v) { return {v.begin(), v.end()}; }

}  // namespace

TEST_CASE("a tuner resumed from any prefix of its journal ends with the same jobs and results") {
  // "+tpe": the sampler learns from the results, so replay must rebuild it to repeat the configs
  // (replay checks each one); after the cut, results arrive in another order, so configs may differ
  // but metrics depend only on (trial, budget).
  const std::string variant = GENERATE(as<std::string>{}, "hyperband", "sha", "random", "grid", "hyperband+tpe", "random+tpe");
  CAPTURE(variant);
  const auto plus = variant.find('+');
  const std::string name = variant.substr(0, plus);
  const auto settings = plus == std::string::npos ? nlohmann::json::object()
                                                  : nlohmann::json{{"sampler", "tpe"}, {"startup_trials", 3}};
  auto context = make_context(1, 9, name == "grid" || name == "random" ? 12 : 0, tuners::Mode::Max, settings);
  if (name == "grid") {
    context.space = tuners::SearchSpace::from_json(
        nlohmann::json::parse(R"({"lr": {"type": "choice", "values": [0.1, 0.03, 0.01, 0.003, 0.001, 0.0003]}})"));
  }
  context.seed = 11;
  testing::TempDir dir;
  const auto path = dir.file("journal.jsonl");

  std::vector<Result> whole;
  {
    auto tuner = tuners::TunerRegistry::instance().create(name, context);
    auto journal = Journal::create(path, {{"header", 1}});
    TunerJournal tuning(*tuner, &journal);
    whole = run_to_end(tuning, {}, 3, 1);
    journal.commit();
  }
  const auto entries = Journal::read(path);
  REQUIRE(entries.size() > 10);

  // A driver killed after any entry: the tuner replays the prefix, the jobs without a result
  // run again, and the experiment ends as the uninterrupted one did.
  for (std::size_t cut = 1; cut <= entries.size(); ++cut) {
    CAPTURE(cut);
    auto tuner = tuners::TunerRegistry::instance().create(name, context);
    TunerJournal tuning(*tuner, nullptr);
    const std::vector<nlohmann::json> prefix(entries.begin(), entries.begin() + static_cast<long>(cut));
    const auto recovered = tuning.replay(prefix);
    std::vector<Result> done;
    for (const auto& row : recovered.rows) {
      const auto trial = row["trial"].get<tuners::TrialId>();
      const double budget = row["budget"].get<double>();
      done.emplace_back(trial, budget, HashObjective(5).evaluate(trial, {}, budget));
    }
    CHECK(static_cast<std::int64_t>(done.size()) == recovered.results);
    auto rest = run_to_end(tuning, recovered.in_flight, 3, static_cast<unsigned>(cut));
    done.insert(done.end(), rest.begin(), rest.end());
    REQUIRE(done.size() == whole.size());
    CHECK(as_set(done) == as_set(whole));
  }
}

TEST_CASE("replay refuses a tuner that does not repeat its decisions") {
  auto context = make_context(1, 9, 6, tuners::Mode::Max);
  context.seed = 1;
  std::vector<nlohmann::json> entries;
  {
    auto tuner = tuners::TunerRegistry::instance().create("random", context);
    testing::TempDir dir;
    auto journal = Journal::create(dir.file("j"), {{"header", 1}});
    TunerJournal tuning(*tuner, &journal);
    tuning.next_job();
    tuning.next_job();
    journal.commit();
    entries = Journal::read(dir.file("j"));
  }
  context.seed = 2;  // another seed samples other configs
  auto tuner = tuners::TunerRegistry::instance().create("random", context);
  TunerJournal tuning(*tuner, nullptr);
  try {
    tuning.replay(entries);
    FAIL("no error");
  } catch (const InputError& e) {  // exit 2: the journal, or a plugin, is the input at fault
    CHECK_THAT(e.what(), Catch::StartsWith("line 2: the tuner did not repeat its decisions"));
  }
}

TEST_CASE("pbt's exploits are journaled with their donors, and replay holds the tuner to them") {
  auto context = make_context(1, 4, 0, tuners::Mode::Max, {{"population", 4}, {"interval", 1}, {"perturb", {"lr"}}});
  testing::TempDir dir;
  std::vector<nlohmann::json> entries;
  {
    auto tuner = tuners::TunerRegistry::instance().create("pbt", context);
    auto journal = Journal::create(dir.file("j"), {{"header", 1}});
    TunerJournal tuning(*tuner, &journal);
    run_to_end(tuning, {}, 4, 3);
    journal.commit();
    entries = Journal::read(dir.file("j"));
  }
  std::vector<std::size_t> exploits;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (!entries[i].contains("job") || !entries[i]["job"].contains("from_trial")) continue;
    exploits.push_back(i);
    const auto& job = entries[i]["job"];
    CHECK(job["from_trial"] != job["trial"]);
    CHECK(job["from_budget"].get<double>() + 1 == job["budget"].get<double>());
  }
  CHECK(exploits.size() == 3);  // one member at each of the 3 generations' ends
  {
    auto tuner = tuners::TunerRegistry::instance().create("pbt", context);
    TunerJournal tuning(*tuner, nullptr);
    CHECK_NOTHROW(tuning.replay(entries));
  }
  auto edited = entries;
  auto& job = edited[exploits.front()]["job"];
  job["from_trial"] = (job["from_trial"].get<std::int64_t>() + 1) % 4 == job["trial"].get<std::int64_t>()
                          ? (job["from_trial"].get<std::int64_t>() + 2) % 4
                          : (job["from_trial"].get<std::int64_t>() + 1) % 4;
  auto tuner = tuners::TunerRegistry::instance().create("pbt", context);
  TunerJournal tuning(*tuner, nullptr);
  try {
    tuning.replay(edited);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("the tuner did not repeat its decisions"));
    CHECK_THAT(e.what(), Catch::Contains("from trial"));
  }
}

TEST_CASE("replay recovers rows, checkpoints, stopped trials and the end of an experiment") {
  auto context = make_context(1, 9, 2, tuners::Mode::Max);
  auto tuner = tuners::TunerRegistry::instance().create("random", context);
  TunerJournal tuning(*tuner, nullptr);
  const Job a = tuner->next_job();
  const Job b = tuner->next_job();
  auto job_entry = [](const Job& j) {
    return nlohmann::json{{"job", {{"kind", "start"}, {"trial", j.trial}, {"budget", j.budget},
                                   {"config", tuners::to_json(j.config)}}}};
  };
  auto fresh = tuners::TunerRegistry::instance().create("random", context);
  TunerJournal replaying(*fresh, nullptr);
  const std::vector<nlohmann::json> entries = {
      {{"header", 1}},
      job_entry(a),
      job_entry(b),
      {{"report", {{"trial", a.trial}, {"budget", 3}, {"metric", 0.5}, {"stop", false}}},
       {"row", {{"trial", a.trial}, {"budget", 3}, {"wall_time", 2.5}}}},
      {{"checkpoint", {{"trial", b.trial}, {"path", "/x/trial-1-budget-9.h5"}, {"budget", 9}}}},
      {{"result", {{"trial", b.trial}, {"budget", 9}, {"metric", nullptr}, {"failed", true}}}},
  };
  const auto r = replaying.replay(entries);
  CHECK(r.rows.size() == 1);
  CHECK(r.wall_time == 2.5);
  CHECK(r.results == 1);
  CHECK(r.failed == 1);
  REQUIRE(r.in_flight.size() == 1);
  CHECK(r.in_flight[0].trial == a.trial);
  CHECK(r.trials.at(a.trial).reported == 3);
  CHECK(r.trials.at(a.trial).last_metric == 0.5);
  REQUIRE(r.checkpoints.size() == 1);
  CHECK(r.checkpoints[0].budget == 9);
  CHECK_FALSE(r.finished);
}

namespace {

// Gives the jobs it is handed, in order, then Wait: a plugin with a bug.
class ScriptedTuner : public tuners::Tuner {
 public:
  explicit ScriptedTuner(std::vector<tuners::Job> jobs) : jobs_(std::move(jobs)) {}
  tuners::Job next_job() override {
    if (next_ == jobs_.size()) return tuners::Job::wait();
    return jobs_[next_++];
  }
  void on_result(tuners::TrialId, double, double) override {}
  std::string name() const override { return "scripted"; }

 private:
  std::vector<tuners::Job> jobs_;
  std::size_t next_ = 0;
};

std::string first_error(std::vector<tuners::Job> jobs, bool result_first = false) {
  ScriptedTuner tuner(std::move(jobs));
  TunerJournal tuning(tuner, nullptr);
  tuning.check_jobs(tuner.name(), 1.0);
  try {
    for (int i = 0; i < 10; ++i) {
      const auto job = tuning.next_job();
      if (result_first && job.kind == tuners::Job::Kind::Start) tuning.on_result(job.trial, 0.5, 0.1, std::nullopt, false);
    }
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a run holds a tuner's jobs to the rules simulate does: a faulty plugin stops with the rule named") {
  using tuners::Job;
  CHECK_THAT(first_error({Job::resume(999, {}, 0.5)}), Catch::Contains("resumed trial 999, which it never started"));
  CHECK_THAT(first_error({Job::start(0, {}, 0.5), Job::start(0, {}, 0.25)}),
             Catch::Contains("started trial 0 twice"));
  CHECK_THAT(first_error({Job::start(1, {}, -1)}), Catch::Contains("expected a positive budget"));
  CHECK_THAT(first_error({Job::start(1, {}, 1000)}), Catch::Contains("above the max budget"));
  CHECK_THAT(first_error({Job::start(0, {}, 0.5), Job::resume(0, {}, 0.25)}, true),
             Catch::Contains("below the 0.500000 it has reached"));
  // Wait with nothing out: nothing would ever change, where the driver used to wait for ever.
  CHECK_THAT(first_error({}), Catch::Contains("asked to wait while no job was running"));
  // Wait while a job is out is how tuners wait.
  CHECK(first_error({Job::start(0, {}, 0.5)}).empty());
}

TEST_CASE("an exception a plugin throws says which tuner and call it came from") {
  struct Throwing : tuners::Tuner {
    tuners::Job next_job() override { throw std::runtime_error("boom"); }
    void on_result(tuners::TrialId, double, double) override {}
    std::string name() const override { return "throwing"; }
  } tuner;
  TunerJournal tuning(tuner, nullptr);
  tuning.check_jobs(tuner.name(), 1.0);
  CHECK_THROWS_WITH(tuning.next_job(), "tuner throwing: next_job failed: boom");
}
