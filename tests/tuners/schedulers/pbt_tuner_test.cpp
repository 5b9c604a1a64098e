#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "packtune/error.hpp"
#include "../tuner_test_support.hpp"
#include "tuners/job_rules.hpp"
#include "tuners/schedulers/pbt_tuner.hpp"

using namespace packtune::tuners;
using namespace packtune::tuners::testing;

namespace {

TunerContext pbt_context(std::int64_t population, double max_budget, nlohmann::json settings) {
  TunerContext c;
  c.space = SearchSpace::from_json(nlohmann::json::parse(R"({
    "lr": {"type": "loguniform", "low": 1e-4, "high": 1e-1},
    "momentum": {"type": "uniform", "low": 0.0, "high": 0.99},
    "batch": {"type": "choice", "values": [32, 64, 128, 256]},
    "layers": {"type": "randint", "low": 1, "high": 4}})"));
  c.min_budget = 1;
  c.max_budget = max_budget;
  c.max_trials = 0;
  c.seed = 11;
  settings["population"] = population;
  c.settings = settings;
  return c;
}

// Every job up to the next Wait or Finished.
std::vector<Job> drain(Tuner& t) {
  std::vector<Job> out;
  for (Job j = t.next_job(); j.kind != Job::Kind::Wait && j.kind != Job::Kind::Finished; j = t.next_job()) {
    out.push_back(std::move(j));
  }
  return out;
}

double number(const TrialConfig& c, const std::string& name) { return as_number(c.at(name), name); }

}  // namespace

TEST_CASE("pbt against a reference computation: the worst member takes the best's weights and config, explored",
          "[pbt]") {
  // One member exploited per generation (quantile 0.25 of 4), so the donor is the best, and one
  // factor with no resampling, so explore is exactly lr x 1.25: the whole schedule follows
  // from the table alone, computed here the plain way.
  const std::vector<std::vector<double>> table = {  // member -> metric at budgets 1, 2, 3
      {0.50, 0.61, 0.70},
      {0.80, 0.62, 0.71},
      {0.30, 0.90, 0.72},
      {0.60, 0.40, 0.73}};
  PbtTuner tuner(pbt_context(4, 3, {}), {4, 1, 0.25, 0, {1.25}, {"lr"}});
  auto jobs = drain(tuner);
  REQUIRE(jobs.size() == 4);
  std::vector<TrialConfig> expected(4);
  for (std::size_t m = 0; m < 4; ++m) {
    CHECK((jobs[m].kind == Job::Kind::Start && jobs[m].trial == static_cast<TrialId>(m) && jobs[m].budget == 1));
    expected[m] = jobs[m].config;
  }
  for (int budget = 1; budget <= 3; ++budget) {
    for (std::size_t m = 0; m < 4; ++m) {
      CHECK(tuner.next_job().kind == Job::Kind::Wait);
      tuner.on_result(static_cast<TrialId>(m), budget, table[m][static_cast<std::size_t>(budget - 1)]);
    }
    if (budget == 3) break;
    std::size_t best = 0, worst = 0;
    for (std::size_t m = 1; m < 4; ++m) {
      if (table[m][budget - 1] > table[best][budget - 1]) best = m;
      if (table[m][budget - 1] < table[worst][budget - 1]) worst = m;
    }
    expected[worst] = expected[best];
    expected[worst]["lr"] = std::clamp(number(expected[best], "lr") * 1.25, 1e-4, 1e-1);
    jobs = drain(tuner);
    REQUIRE(jobs.size() == 4);
    CHECK(jobs[0].trial == static_cast<TrialId>(worst));  // the exploit first, then the others in order
    for (std::size_t i = 0; i < 4; ++i) {
      const auto m = static_cast<std::size_t>(jobs[i].trial);
      INFO("budget " << budget << ", member " << m);
      CHECK(jobs[i].kind == Job::Kind::Resume);
      if (i >= 2) CHECK(jobs[i].trial > jobs[i - 1].trial);
      CHECK(jobs[i].budget == budget + 1);
      CHECK(jobs[i].from_trial == (m == worst ? static_cast<TrialId>(best) : -1));
      if (m == worst) CHECK(jobs[i].from_budget == budget);
      CHECK(to_json(jobs[i].config) == to_json(expected[m]));
    }
  }
  CHECK(tuner.next_job().kind == Job::Kind::Finished);
}

TEST_CASE("pbt exploits the bottom quantile from the top one, and every failed member", "[pbt]") {
  const std::int64_t population = 16;
  PbtTuner tuner(pbt_context(population, 6, {}), {population, 2, 0.25, 0.25, {0.8, 1.2}, {"lr", "batch", "layers"}});
  REQUIRE(tuner.exploit_count() == 4);
  HashObjective objective(5);
  std::vector<TrialConfig> configs(population);
  for (const auto& j : drain(tuner)) configs[static_cast<std::size_t>(j.trial)] = j.config;
  std::set<double> lr_factors;
  for (double budget : {2.0, 4.0}) {
    std::vector<double> metric(population);
    for (TrialId m = 0; m < population; ++m) {
      metric[m] = m == 3 ? NAN : objective.evaluate(m, configs[m], budget);  // member 3 diverged
      tuner.on_result(m, budget, metric[m]);
    }
    std::vector<TrialId> order(population);
    for (TrialId m = 0; m < population; ++m) order[m] = m;
    std::sort(order.begin(), order.end(), [&](TrialId a, TrialId b) { return ranks_before(metric[a], a, metric[b], b, Mode::Max); });
    const std::set<TrialId> top(order.begin(), order.begin() + 4), bottom(order.end() - 4, order.end());
    const auto jobs = drain(tuner);
    REQUIRE(jobs.size() == static_cast<std::size_t>(population));
    for (const auto& j : jobs) {
      INFO("member " << j.trial << " at budget " << budget);
      const bool exploited = bottom.count(j.trial) > 0 || j.trial == 3;
      CHECK((j.from_trial >= 0) == exploited);
      CHECK(j.budget == budget + 2);
      if (!exploited) {
        CHECK(to_json(j.config) == to_json(configs[j.trial]));
        continue;
      }
      CHECK(top.count(j.from_trial) == 1);
      CHECK(j.from_budget == budget);
      const auto& donor = configs[j.from_trial];
      CHECK(number(j.config, "momentum") == number(donor, "momentum"));  // not in perturb
      const double lr = number(j.config, "lr"), ratio = lr / number(donor, "lr");
      CHECK((lr >= 1e-4 && lr <= 1e-1));
      if (std::abs(ratio - 0.8) < 1e-12 || std::abs(ratio - 1.2) < 1e-12) lr_factors.insert(std::round(ratio * 10) / 10);
      const auto batch = [](const TrialConfig& c) {
        const std::vector<double> values{32, 64, 128, 256};
        return std::find(values.begin(), values.end(), number(c, "batch")) - values.begin();
      };
      CHECK(std::abs(batch(j.config) - batch(donor)) <= 3);  // a step, or a resample anywhere
      const double layers = number(j.config, "layers");
      CHECK((layers >= 1 && layers <= 4 && layers == std::round(layers)));
    }
    for (const auto& j : jobs) configs[static_cast<std::size_t>(j.trial)] = j.config;
  }
  CHECK(lr_factors == std::set<double>{0.8, 1.2});  // both factors were drawn
  for (TrialId m = 0; m < population; ++m) tuner.on_result(m, 6, 0.5);
  CHECK(tuner.next_job().kind == Job::Kind::Finished);
}

TEST_CASE("pbt explore keeps a choice within its list and resamples inside the space", "[pbt]") {
  PbtTuner always(pbt_context(4, 2, {}), {4, 1, 0.25, 1.0, {1.2}, {"lr", "batch"}});
  PbtTuner never(pbt_context(4, 2, {}), {4, 1, 0.25, 0.0, {1.2}, {"batch"}});
  std::mt19937_64 rng(3);
  const TrialConfig top{{"lr", 0.1}, {"momentum", 0.5}, {"batch", std::int64_t{256}}, {"layers", std::int64_t{2}}};
  std::set<std::int64_t> resampled, stepped;
  for (int i = 0; i < 200; ++i) {
    const auto r = always.explore(top, rng);
    resampled.insert(std::get<std::int64_t>(r.at("batch")));
    CHECK((number(r, "lr") >= 1e-4 && number(r, "lr") <= 1e-1));
    stepped.insert(std::get<std::int64_t>(never.explore(top, rng).at("batch")));
  }
  CHECK(resampled == std::set<std::int64_t>{32, 64, 128, 256});
  CHECK(stepped == std::set<std::int64_t>{128, 256});  // one step down, or kept at the end
}

TEST_CASE("pbt in simulation: every member trains to the max budget, the same for a seed", "[pbt]") {
  const auto run = [] {
    auto c = pbt_context(8, 5, {{"interval", 1}, {"perturb", {"lr", "momentum"}}});
    auto tuner = TunerRegistry::instance().create("pbt", c);
    HashObjective objective(9);
    SimulationSummary summary;
    auto events = simulate(*tuner, objective, Mode::Max, 3, &summary);
    return std::make_pair(events, summary);
  };
  const auto [events, summary] = run();
  CHECK(summary.trials == 8);
  CHECK(summary.jobs == 40);
  CHECK(summary.total_budget == Approx(40));
  CHECK(summary.best_budget == 5);
  // Two of eight exploited at each of the four generations' ends, as the events show.
  std::size_t exploits = 0;
  for (const auto& e : events) {
    if (e.kind != SimulationEvent::Kind::Start || e.from_trial < 0) continue;
    ++exploits;
    CHECK(e.resume);
    CHECK(e.from_budget == e.budget - 1);
    CHECK(e.from_trial != e.trial);
    CHECK(e.config.count("lr") == 1);
  }
  CHECK(exploits == 8);
  const auto [again, summary_again] = run();
  REQUIRE(again.size() == events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    CHECK((again[i].trial == events[i].trial && again[i].budget == events[i].budget && again[i].time == events[i].time));
  }
  CHECK(summary_again.best_metric == summary.best_metric);
  for (std::size_t i = 0; i < events.size(); ++i) {
    CHECK((again[i].from_trial == events[i].from_trial && to_json(again[i].config) == to_json(events[i].config)));
  }
}

TEST_CASE("pbt: failed members are exploited whatever their rank; when all fail the run ends", "[pbt]") {
  // Population 8, k = 2: five members fail, so three of them rank above the bottom two.
  PbtTuner tuner(pbt_context(8, 3, {}), {8, 1, 0.25, 0, {1.2}, {"lr"}});
  drain(tuner);
  const std::set<TrialId> failed{0, 2, 4, 5, 7};
  for (TrialId m = 0; m < 8; ++m) tuner.on_result(m, 1, failed.count(m) ? NAN : 0.1 * static_cast<double>(m));
  const auto jobs = drain(tuner);
  REQUIRE(jobs.size() == 8);
  std::set<TrialId> exploited;
  for (const auto& j : jobs) {
    if (j.from_trial < 0) continue;
    exploited.insert(j.trial);
    CHECK((j.from_trial == 6 || j.from_trial == 3));  // the top two that did not fail
  }
  CHECK(exploited == failed);
  for (TrialId m = 0; m < 8; ++m) tuner.on_result(m, 2, NAN);
  CHECK(drain(tuner).empty());
  CHECK(tuner.next_job().kind == Job::Kind::Finished);
}

TEST_CASE("pbt settings: one clear error each", "[pbt]") {
  auto& registry = TunerRegistry::instance();
  const auto refused = [&](nlohmann::json settings, std::int64_t trials = 0) {
    auto c = pbt_context(4, 3, {});
    c.settings = std::move(settings);
    c.max_trials = trials;
    try {
      registry.create("pbt", c);
    } catch (const packtune::InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(refused({{"population", 4}}), Catch::Contains("tuner.perturb: list the hyper-parameters"));
  CHECK_THAT(refused({{"perturb", {"lr", "depth"}}}), Catch::Contains("tuner.perturb: depth is not a parameter"));
  CHECK_THAT(refused({{"perturb", {"lr", "lr"}}}), Catch::Contains("distinct names"));
  CHECK_THAT(refused({{"perturb", {"lr"}}, {"quantile", 0.6}}), Catch::Contains("tuner.quantile"));
  CHECK_THAT(refused({{"perturb", {"lr"}}, {"resample_probability", 1.5}}), Catch::Contains("tuner.resample_probability"));
  CHECK_THAT(refused({{"perturb", {"lr"}}, {"perturbation_factors", {0.8, -1}}}), Catch::Contains("tuner.perturbation_factors"));
  CHECK_THAT(refused({{"perturb", {"lr"}}, {"interval", 0}}), Catch::Contains("tuner.interval"));
  CHECK_THAT(refused({{"perturb", {"lr"}}, {"population", 1}}), Catch::Contains("tuner.population"));
  CHECK_THAT(refused({{"perturb", {"lr"}}, {"population", 6}}, 8), Catch::Contains("tuner.trials: 8 trials for a pbt population of 6"));
  CHECK(refused({{"perturb", {"lr"}}}, 6) == "accepted");  // trials alone is the population
}

TEST_CASE("PbtTuner: an interval below a step or a sliver of budget.max is refused", "[pbt]") {
  // 1e-300 once made a schedule of generations that never ended (plan passed, run and simulate hung).
  const auto refused = [](double interval, double step_budget, const std::string& unit) {
    auto c = pbt_context(4, 100, {{"perturb", {"lr"}}, {"interval", interval}});
    c.budget_unit = unit;
    c.step_budget = step_budget;
    c.step_note = step_budget == 0.0625 ? "16 steps an epoch" : "";
    try {
      TunerRegistry::instance().create("pbt", c);
    } catch (const packtune::InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(refused(1e-300, 1, "steps") ==
        "tuner.interval: 1e-300 steps is less than a step, the least a job trains; use at least 1");
  CHECK(refused(0.5, 1, "steps") ==
        "tuner.interval: 0.5 steps is less than a step, the least a job trains; use at least 1");
  CHECK(refused(1, 1, "steps") == "accepted");
  CHECK(refused(0.05, 0.0625, "epochs") == "tuner.interval: 0.05 epochs is less than a step (16 steps an epoch), "
                                           "the least a job trains; use at least 0.0625");
  CHECK(refused(0.0625, 0.0625, "epochs") == "accepted");
  // No step known (a simulation in epochs): at most 100000 generations up to budget.max.
  CHECK(refused(1e-300, 0, "") == "tuner.interval: 1e-300 divides budget.max 100 into more than 100000 parts, more "
                                  "reports than a trial may make; use at least 0.001");
  CHECK(refused(0.001, 0, "") == "accepted");
  CHECK(refused(std::nan(""), 0, "").find("tuner.interval") == 0);
}

TEST_CASE("JobRules: an exploit needs the donor's checkpoint at that budget", "[pbt]") {
  JobRules rules("pbt", 4);
  rules.check(Job::start(0, {}, 1));
  rules.check(Job::start(1, {}, 1));
  rules.result(0, 1);
  CHECK_THROWS_WITH(rules.check(Job::exploit(0, {}, 2, 1, 1)), Catch::Contains("trial 0 takes trial 1's checkpoint at budget"));
  rules.result(1, 1);
  CHECK_THROWS_WITH(rules.check(Job::exploit(0, {}, 2, 0, 1)), Catch::Contains("its own checkpoint"));
  CHECK_NOTHROW(rules.check(Job::exploit(0, {}, 2, 1, 1)));
}
