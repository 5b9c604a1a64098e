#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <set>

#include "packtune/error.hpp"
#include "../tuner_test_support.hpp"
#include "tuners/schedulers/brackets.hpp"
#include "tuners/schedulers/hyperband_tuner.hpp"

using namespace packtune::tuners;
using namespace packtune::tuners::testing;

namespace {

// Which trials reached which budget, from the result events.
std::map<double, std::set<TrialId>> reached_by_budget(const std::vector<SimulationEvent>& events) {
  std::map<double, std::set<TrialId>> out;
  for (const auto& e : events) {
    if (e.kind == SimulationEvent::Kind::Result) out[e.budget].insert(e.trial);
  }
  return out;
}

}  // namespace

TEST_CASE("successive halving keeps exactly the best 1/eta of each rung") {
  // Nine trials, eta 3, budgets 1, 3, 9. At budget 1 the best (min) are t4, t7, t1; at
  // budget 3 the best of those is t7, whose metric is worst at budget 1 among the three.
  std::vector<std::tuple<int, double, double>> rows;
  const double at1[] = {0.9, 0.3, 0.8, 0.7, 0.1, 0.6, 0.5, 0.35, 0.95};
  for (int t = 0; t < 9; ++t) {
    rows.emplace_back(t, 1, at1[t]);
    rows.emplace_back(t, 3, t == 7 ? 0.01 : at1[t] / 2);
    rows.emplace_back(t, 9, 0.01 * t);
  }
  auto table = make_table(rows);
  for (int workers : {1, 4}) {
    auto tuner = TunerRegistry::instance().create("sha", make_context(1, 9, 0, Mode::Min));
    SimulationSummary summary;
    const auto events = simulate(*tuner, table, Mode::Min, workers, &summary);
    const auto reached = reached_by_budget(events);
    CHECK(reached.at(1).size() == 9);
    CHECK(reached.at(3) == std::set<TrialId>{1, 4, 7});
    CHECK(reached.at(9) == std::set<TrialId>{7});
    CHECK(summary.best_trial == 7);
    CHECK(summary.best_budget == 9);
    CHECK(summary.trials == 9);
    CHECK(summary.jobs == 13);
    CHECK(summary.total_budget == Approx(9 * 1 + 3 * 2 + 1 * 6));
  }
}

TEST_CASE("successive halving waits for the whole rung before promoting") {
  auto tuner = TunerRegistry::instance().create("sha", make_context(1, 4, 4, Mode::Max, {{"eta", 2}}));
  std::vector<Job> jobs;
  for (int i = 0; i < 4; ++i) jobs.push_back(tuner->next_job());
  for (const auto& j : jobs) CHECK(j.kind == Job::Kind::Start);
  CHECK(tuner->next_job().kind == Job::Kind::Wait);
  tuner->on_result(0, 1, 0.1);
  tuner->on_result(1, 1, 0.9);
  tuner->on_result(2, 1, 0.5);
  CHECK(tuner->next_job().kind == Job::Kind::Wait);  // t3 still running, though t1 is clearly in
  tuner->on_result(3, 1, 0.7);
  const Job first = tuner->next_job();
  const Job second = tuner->next_job();
  CHECK(first.kind == Job::Kind::Resume);
  CHECK(first.trial == 1);
  CHECK(first.budget == 2);
  CHECK(first.config == jobs[1].config);
  CHECK(second.trial == 3);
  CHECK(tuner->next_job().kind == Job::Kind::Wait);
  tuner->on_result(1, 2, 0.6);
  tuner->on_result(3, 2, 0.8);
  const Job last = tuner->next_job();
  CHECK(last.trial == 3);
  CHECK(last.budget == 4);
  tuner->on_result(3, 4, 0.9);
  CHECK(tuner->next_job().kind == Job::Kind::Finished);
}

TEST_CASE("Hyperband runs every bracket of the schedule and eliminates within each") {
  auto table_free = HashObjective(3);
  auto tuner = TunerRegistry::instance().create("hyperband", make_context(1, 81, 0, Mode::Max));
  SimulationSummary summary;
  const auto events = simulate(*tuner, table_free, Mode::Max, 1, &summary);
  const auto schedule = hyperband_brackets(1, 81, 3);
  std::int64_t total = 0;
  for (const auto& b : schedule) total += b.rungs.front().n;
  CHECK(summary.trials == total);  // 81 + 34 + 15 + 8 + 5

  // Per bracket: trial ids are consecutive, rung i holds exactly n_i trials at its budget.
  TrialId first = 0;
  for (const auto& b : schedule) {
    const TrialId end = first + b.rungs.front().n;
    std::map<double, std::int64_t> count;
    for (const auto& e : events) {
      if (e.kind == SimulationEvent::Kind::Result && e.trial >= first && e.trial < end) ++count[e.budget];
    }
    for (const auto& r : b.rungs) CHECK(count[r.budget] == r.n);
    CHECK(count.size() == b.rungs.size());
    first = end;
  }
}

TEST_CASE("Hyperband never spends more than B per bracket, on random tables and schedules") {
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    const std::int64_t eta = 2 + static_cast<std::int64_t>(seed % 4);
    const double min_budget = 0.5 * static_cast<double>(1 + seed % 3);
    const double ratio = 1 + static_cast<double>((seed * 37) % 120);
    const double max_budget = min_budget * ratio;
    const std::int64_t trials = seed % 3 == 0 ? 0 : static_cast<std::int64_t>(10 + seed * 13 % 300);
    const Mode mode = seed % 2 ? Mode::Max : Mode::Min;
    auto tuner = TunerRegistry::instance().create(
        "hyperband", make_context(min_budget, max_budget, trials, mode, {{"eta", eta}}));
    HashObjective objective(seed, seed % 4 == 0 ? 3 : 0);
    const auto events = simulate(*tuner, objective, mode, 1 + static_cast<int>(seed % 9));
    const auto opened = dynamic_cast<HyperbandTuner&>(*tuner).opened_brackets();
    const int s_max = max_early_stopping_rate(min_budget, max_budget, eta);
    const double bracket_budget = (s_max + 1) * ratio * min_budget;

    // Charge every job its full budget (as if each rung retrained from scratch) to the
    // bracket its trial belongs to.
    std::vector<TrialId> firsts;
    TrialId next = 0;
    for (const auto& b : opened) {
      firsts.push_back(next);
      next += b.rungs.front().n;
    }
    std::vector<double> spent(opened.size(), 0);
    for (const auto& e : events) {
      if (e.kind != SimulationEvent::Kind::Start) continue;
      const auto at = std::upper_bound(firsts.begin(), firsts.end(), e.trial) - firsts.begin() - 1;
      spent[static_cast<std::size_t>(at)] += e.budget;
    }
    std::int64_t one_sweep = 0;
    for (const auto& b : hyperband_brackets(min_budget, max_budget, eta)) one_sweep += b.rungs.front().n;
    INFO("seed " << seed << " eta " << eta << " R " << ratio << " trials " << trials);
    CHECK(next == (trials == 0 ? one_sweep : trials));
    for (std::size_t i = 0; i < opened.size(); ++i) {
      CHECK(spent[i] <= bracket_budget * (1 + 1e-9));
      CHECK(spent[i] == Approx(opened[i].total_budget()));
    }
  }
}

TEST_CASE("Hyperband cycles its brackets up to the trial limit and cuts the last one") {
  auto tuner = TunerRegistry::instance().create("hyperband", make_context(1, 9, 30, Mode::Max));
  HashObjective objective(5);
  SimulationSummary summary;
  simulate(*tuner, objective, Mode::Max, 3, &summary);
  CHECK(summary.trials == 30);
  // R = 9, eta 3: brackets of 9, 5 and 3 trials (17), then 9 and 4 of the next sweep's 5.
  std::vector<std::int64_t> sizes;
  std::vector<int> rates;
  for (const auto& b : dynamic_cast<HyperbandTuner&>(*tuner).opened_brackets()) {
    sizes.push_back(b.rungs.front().n);
    rates.push_back(b.s);
  }
  CHECK(sizes == std::vector<std::int64_t>{9, 5, 3, 9, 4});
  CHECK(rates == std::vector<int>{2, 1, 0, 2, 1});
}

TEST_CASE("the same seed gives the same configs and schedule, another seed does not") {
  const auto run = [](const char* name, std::uint64_t seed) {
    auto context = make_context(1, 27, 40, Mode::Min);
    context.seed = seed;
    auto tuner = TunerRegistry::instance().create(name, context);
    std::vector<std::pair<TrialId, TrialConfig>> starts;
    HashObjective objective(1);
    // Capture configs through a wrapping objective: the simulator passes each trial's config.
    struct Recorder : Objective {
      HashObjective& inner;
      std::vector<std::pair<std::int64_t, TrialConfig>> seen;
      explicit Recorder(HashObjective& o) : inner(o) {}
      double evaluate(std::int64_t i, const TrialConfig& c, double b) override {
        seen.emplace_back(i, c);
        return inner.evaluate(i, c, b);
      }
      std::string description() const override { return "recorder"; }
    } recorder(objective);
    const auto events = simulate(*tuner, recorder, Mode::Min, 3);
    return std::make_pair(start_order(events), recorder.seen);
  };
  for (const char* name : {"sha", "hyperband", "asha", "async_hyperband", "random"}) {
    INFO(name);
    const auto a = run(name, 11);
    const auto b = run(name, 11);
    const auto c = run(name, 12);
    CHECK(a == b);
    CHECK(a.second != c.second);
  }
}

TEST_CASE("successive halving and Hyperband check their settings") {
  auto& registry = TunerRegistry::instance();
  for (const char* name : {"sha", "hyperband"}) {
    INFO(name);
    CHECK_THAT(error_of([&] { registry.create(name, make_context(1, 81, 0, Mode::Max, {{"eta", 1}})); }),
               Catch::Contains("tuner.eta"));
    CHECK_THAT(error_of([&] { registry.create(name, make_context(1, 81, 0, Mode::Max, {{"s", 1}})); }),
               Catch::Contains("tuner.s") && Catch::Contains("unknown key"));
    CHECK_THAT(error_of([&] { registry.create(name, make_context(1, 81, -1)); }),
               Catch::Contains("tuner.trials"));
    CHECK_THAT(error_of([&] { registry.create(name, make_context(2, 1, 0)); }),
               Catch::Contains("budget.min") && Catch::Contains("min <= max"));
    CHECK_THAT(error_of([&] { registry.create(name, make_context(1, -1, 0)); }),
               Catch::Contains("budget.max"));
  }
}

TEST_CASE("the planned budget is what the schedule's jobs add; ASHA's is a floor") {
  struct Case {
    const char* tuner;
    double min_budget, max_budget;
    std::int64_t trials;
    nlohmann::json settings;
  };
  const std::vector<Case> cases = {
      {"random", 1, 4, 7, {}},
      {"hyperband", 0.25, 2.25, 0, {{"eta", 3}}},   // one whole sweep
      {"hyperband", 0.25, 2.25, 10, {{"eta", 3}}},  // the limit cuts the first bracket
      {"hyperband", 1, 27, 100, {{"eta", 3}}},      // more than one sweep
      {"sha", 1, 16, 0, {{"eta", 2}}},
      {"sha", 1, 16, 11, {{"eta", 2}}},
  };
  for (const auto& c : cases) {
    INFO(c.tuner << " trials " << c.trials);
    auto tuner = TunerRegistry::instance().create(c.tuner, make_context(c.min_budget, c.max_budget, c.trials,
                                                                         Mode::Max, c.settings));
    const auto planned = tuner->planned_budget();
    REQUIRE(planned);
    HashObjective objective(7);
    SimulationSummary summary;
    simulate(*tuner, objective, Mode::Max, 3, &summary);
    CHECK(*planned == Approx(summary.total_budget));
  }
  // ASHA promotes the best 1/eta of each rung, and more when early promotions fall out of
  // the top later: at least the floor, and for these objectives not far above it.
  const std::vector<Case> asynchronous = {
      {"asha", 1, 9, 20, {{"eta", 3}}},         // rungs of 20, 6, 2
      {"asha", 1.5, 13.5, 12, {{"eta", 3}}},    // examples/fashion_mnist_cnn.json
      {"asha", 1, 27, 50, {{"eta", 3}, {"s", 1}}},
      {"async_hyperband", 1, 27, 40, {{"eta", 3}}},
  };
  for (const auto& c : asynchronous) {
    for (int workers : {1, 4}) {
      INFO(c.tuner << " trials " << c.trials << " workers " << workers);
      auto tuner = TunerRegistry::instance().create(c.tuner, make_context(c.min_budget, c.max_budget, c.trials,
                                                                           Mode::Max, c.settings));
      const auto planned = tuner->planned_budget();
      REQUIRE(planned);
      HashObjective objective(11);
      SimulationSummary summary;
      simulate(*tuner, objective, Mode::Max, workers, &summary);
      CHECK(summary.total_budget >= *planned - 1e-9);
      CHECK(summary.total_budget <= *planned * 1.5);
    }
  }
  // 20 trials at 1, 6 go on to 3, 2 to 9: 20 + 6 * 2 + 2 * 6.
  CHECK(*TunerRegistry::instance().create("asha", make_context(1, 9, 20, Mode::Max, {{"eta", 3}}))->planned_budget() ==
        Approx(44));
}

TEST_CASE("a trial limit that cuts a Hyperband sweep short says so; whole sweeps and other tuners do not") {
  // eta 3 over 0.25 ... 2.25: brackets of 9 and 5 (and 3) trials, one sweep of 17.
  auto cut = TunerRegistry::instance().create("hyperband", make_context(0.25, 2.25, 10, Mode::Max, {{"eta", 3}}));
  const auto warnings = cut->warnings();
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::Contains("tuner.trials 10 cuts a Hyperband sweep short: one sweep is 17 trials") &&
                              Catch::Contains("starts 1 of its 5 trials") && Catch::Contains("a multiple of 17"));
  for (std::int64_t trials : {0, 17, 34}) {
    INFO(trials);
    CHECK(TunerRegistry::instance()
              .create("hyperband", make_context(0.25, 2.25, trials, Mode::Max, {{"eta", 3}}))
              ->warnings()
              .empty());
  }
  CHECK(TunerRegistry::instance().create("sha", make_context(0.25, 2.25, 10, Mode::Max, {{"eta", 3}}))->warnings().empty());
}
