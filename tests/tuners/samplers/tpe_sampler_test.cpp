#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <deque>

#include "packtune/error.hpp"
#include "../tuner_test_support.hpp"
#include "tuners/samplers/tpe_sampler.hpp"
#include "tuners/tuner_settings.hpp"

using namespace packtune;
using namespace packtune::tuners;
using nlohmann::json;

namespace {

SearchSpace space_of(const char* text) { return SearchSpace::from_json(json::parse(text)); }

const char* kMixed = R"({"x": {"type": "uniform", "low": -5, "high": 5},
                         "lr": {"type": "loguniform", "low": 1e-4, "high": 1e-1},
                         "depth": {"type": "randint", "low": 1, "high": 4},
                         "opt": {"type": "choice", "values": ["sgd", "adam", "adamw"]}})";

// Lower is better: a bowl at x = 1.5, lr = 1e-2, depth = 3, opt = adam.
double bowl(const TrialConfig& c) {
  const double x = std::get<double>(c.at("x"));
  const double lr = std::log10(std::get<double>(c.at("lr")));
  const auto depth = std::get<std::int64_t>(c.at("depth"));
  const bool adam = std::get<std::string>(c.at("opt")) == "adam";
  return (x - 1.5) * (x - 1.5) + (lr + 2) * (lr + 2) + 0.5 * std::abs(depth - 3) + (adam ? 0 : 1);
}

// The mean of `bowl` over trials [from, to) of a sampler that sees every result at budget 1.
double mean_bowl(ConfigSampler& sampler, int from, int to) {
  double sum = 0;
  for (int t = 0; t < to; ++t) {
    const auto s = sampler.suggest(t);
    const double loss = bowl(s.config);
    sampler.observe(t, s.config, 1.0, loss);
    if (t >= from) sum += loss;
  }
  return sum / (to - from);
}

}  // namespace

TEST_CASE("tpe draws at random until startup_trials trials have results, as the random sampler would") {
  TpeSampler tpe(space_of(kMixed), Mode::Min, 42, {});
  RandomSampler random(space_of(kMixed), 42);
  for (int t = 0; t < 10; ++t) {
    const auto a = tpe.suggest(t);
    CHECK(a.config == random.suggest(t).config);
    CHECK(a.why["random"] == true);
    // Results at two budgets: trials, not results, are counted.
    if (t < 5) tpe.observe(t, a.config, 1.0, bowl(a.config));
    tpe.observe(t, a.config, t < 5 ? 3.0 : 1.0, bowl(a.config));
  }
  const auto after = tpe.suggest(10);
  CHECK(after.why["good"].size() == 1);
  CHECK(after.why["bad"] == 9);
}

TEST_CASE("the good set is the best ceil(gamma n), at most 25, ranked like the tuners rank, failures left out") {
  TpeSampler tpe(space_of(R"({"x": {"type": "uniform", "low": 0, "high": 1}})"), Mode::Max, 1,
                 {/*startup_trials=*/4, /*gamma=*/0.25, 24, false});
  CHECK(tpe.good_count(1) == 1);
  CHECK(tpe.good_count(8) == 2);
  CHECK(tpe.good_count(9) == 3);
  CHECK(tpe.good_count(1000) == 25);
  // Max mode: higher is better, NaN last, ties to the lower trial id.
  const std::vector<double> metrics{0.5, NAN, 0.9, 0.7, 0.9, 0.1, 0.2, 0.3};
  for (int t = 0; t < 8; ++t) tpe.observe(t, {{"x", 0.1 * t}}, 2.0, metrics[static_cast<std::size_t>(t)]);
  tpe.observe(3, {{"x", 0.3}}, 2.0, 0.95);  // a trial's later result at the same budget replaces it
  const auto s = tpe.suggest(8);
  CHECK(s.why["good"] == json::array({2, 3}));
  CHECK(s.why["bad"] == 5);  // trial 1 failed: left out
}

TEST_CASE("failed results are left out: they neither count nor replace an earlier result") {
  TpeSampler tpe(space_of(R"({"x": {"type": "uniform", "low": 0, "high": 1}})"), Mode::Min, 1, {3, 0.5, 24, false});
  for (int t = 0; t < 4; ++t) tpe.observe(t, {{"x", 0.2 * t}}, 1.0, NAN);
  CHECK(tpe.suggest(4).why["random"] == true);  // four results, all failed: nothing to model
  for (int t = 0; t < 3; ++t) tpe.observe(t, {{"x", 0.2 * t}}, 3.0, 1.0 * t);
  tpe.observe(0, {{"x", 0.0}}, 3.0, NAN);  // trial 0 fails later, at a budget it reached before
  const auto s = tpe.suggest(5);
  CHECK(s.why["good"] == json::array({0, 1}));
  CHECK(s.why["good_budgets"] == json::array({3.0, 3.0}));
  CHECK(s.why["bad"] == 2);  // trial 2, and trial 4, started and not reported (the constant liar)
  CHECK(s.why["running"] == 1);
}

TEST_CASE("furthest: a trial that trained further ranks above one that stopped earlier") {
  TpeSampler tpe(space_of(R"({"x": {"type": "uniform", "low": 0, "high": 1}})"), Mode::Min, 1, {4, 0.5, 24, false});
  for (int t = 0; t < 6; ++t) tpe.observe(t, {{"x", 0.1 * t}}, 1.0, 1.0 * t);
  // Trials 3 and 5 go on to budget 3 and do worse there than trials 0-2 did at budget 1.
  tpe.observe(5, {{"x", 0.5}}, 3.0, 9.0);
  tpe.observe(3, {{"x", 0.3}}, 3.0, 8.0);
  const auto s = tpe.suggest(6);
  CHECK(s.why["good"] == json::array({0, 3, 5}));  // ranked 3, 5, then 0: listed by id
  CHECK(s.why["good_budgets"] == json::array({1.0, 3.0, 3.0}));
  CHECK(s.why["bad"] == 3);
  CHECK_FALSE(s.why.contains("budget"));
}

TEST_CASE("highest_budget: tpe models the highest budget with enough results, as BOHB does") {
  TpeOptions options{3, 0.1, 24, false};
  options.multi_fidelity = MultiFidelity::HighestBudget;
  TpeSampler tpe(space_of(R"({"x": {"type": "uniform", "low": 0, "high": 1}})"), Mode::Min, 1, options);
  for (int t = 0; t < 5; ++t) tpe.observe(t, {{"x", 0.2 * t}}, 1.0, 1.0 * t);
  for (int t = 0; t < 2; ++t) tpe.observe(t, {{"x", 0.2 * t}}, 9.0, 1.0 * t);
  CHECK(tpe.suggest(5).why["budget"] == 1.0);
  tpe.observe(4, {{"x", 0.8}}, 9.0, -1.0);
  const auto s = tpe.suggest(6);
  CHECK(s.why["budget"] == 9.0);
  CHECK(s.why["good"] == json::array({4}));
  CHECK(s.why["bad"] == 3);  // trials 0 and 1 at budget 9, and trial 5, still running
}

TEST_CASE("the constant liar: trials started and not yet reported join the bad set, until they report") {
  for (const bool liar : {true, false}) {
    CAPTURE(liar);
    TpeOptions options{4, 0.25, 24, false};
    options.constant_liar = liar;
    TpeSampler tpe(space_of(R"({"x": {"type": "uniform", "low": 0, "high": 1}})"), Mode::Min, 1, options);
    for (int t = 0; t < 8; ++t) tpe.observe(t, {{"x", 0.1 * t}}, 1.0, 1.0 * t);
    const auto first = tpe.suggest(8);
    const auto second = tpe.suggest(9);  // trial 8 still running
    CHECK(first.why["bad"] == 6);
    CHECK(second.why["bad"] == (liar ? 7 : 6));
    CHECK(second.why.contains("running") == liar);
    tpe.observe(8, first.config, 1.0, NAN);  // a failed trial is no longer running either
    CHECK(tpe.suggest(10).why["bad"] == (liar ? 7 : 6));
  }
}

TEST_CASE("the bad set is capped at the newest max_bad results outside the good set") {
  const auto space = space_of(R"({"x": {"type": "uniform", "low": 0, "high": 1}})");
  TpeOptions options{3, 0.1, 24, false};
  options.max_bad = 5;
  TpeSampler tpe(space, Mode::Min, 1, options);
  // Trial 0 is the best; the newest five others are 15..19.
  for (int t = 0; t < 20; ++t) tpe.observe(t, {{"x", 0.05 * t}}, 1.0, t == 0 ? -1.0 : 1.0 * t);
  const auto s = tpe.suggest(20);
  CHECK(s.why["good"] == json::array({0, 1}));
  CHECK(s.why["bad"] == 5);
  // Two samplers that differ only in results older than the newest five bad ones suggest alike.
  TpeSampler other(space, Mode::Min, 1, options);
  for (int t = 0; t < 20; ++t) other.observe(t, {{"x", t < 15 && t > 1 ? 0.5 : 0.05 * t}}, 1.0, t == 0 ? -1.0 : 1.0 * t);
  TpeSampler again(space, Mode::Min, 1, options);
  for (int t = 0; t < 20; ++t) again.observe(t, {{"x", 0.05 * t}}, 1.0, t == 0 ? -1.0 : 1.0 * t);
  CHECK(other.suggest(20).config == again.suggest(20).config);
  options.max_bad = 0;
  CHECK_THROWS_AS(TpeSampler(space, Mode::Min, 1, options), packtune::Error);
}

TEST_CASE("estimators kept between suggestions follow every result that changes the sets") {
  TpeSampler tpe(space_of(R"({"x": {"type": "uniform", "low": 0, "high": 1}})"), Mode::Min, 5, {10, 0.1, 24, false});
  // The best results near 0.1: suggestions go there, several in a row (the kept estimators).
  for (int t = 0; t < 200; ++t) {
    const double x = 0.005 * t;
    tpe.observe(t, {{"x", x}}, 1.0, std::abs(x - 0.1));
  }
  for (int s = 0; s < 5; ++s) CHECK(std::abs(std::get<double>(tpe.suggest(200 + s).config.at("x")) - 0.1) < 0.1);
  // Better results near 0.9 take the good set over: the next suggestions follow them.
  for (int t = 205; t < 245; ++t) tpe.observe(t, {{"x", 0.9 + 0.0001 * (t - 205)}}, 1.0, -1.0);
  for (int s = 0; s < 5; ++s) CHECK(std::abs(std::get<double>(tpe.suggest(245 + s).config.at("x")) - 0.9) < 0.1);
}

TEST_CASE("tpe learns: on a bowl over every space type its later trials beat random search's") {
  for (const bool multivariate : {false, true}) {
    CAPTURE(multivariate);
    TpeSampler tpe(space_of(kMixed), Mode::Min, 7, {10, 0.1, 24, multivariate});
    RandomSampler random(space_of(kMixed), 7);
    const double tpe_loss = mean_bowl(tpe, 40, 100);
    const double random_loss = mean_bowl(random, 40, 100);
    CAPTURE(tpe_loss, random_loss);
    CHECK(tpe_loss < 0.5 * random_loss);
  }
}

TEST_CASE("tpe is deterministic: the same seed and results give the same suggestions") {
  const auto run = [] {
    TpeSampler tpe(space_of(kMixed), Mode::Min, 3, {5, 0.2, 16, false});
    std::vector<TrialConfig> out;
    for (int t = 0; t < 30; ++t) {
      auto s = tpe.suggest(t);
      tpe.observe(t, s.config, 1.0, bowl(s.config));
      out.push_back(s.config);
    }
    return out;
  };
  CHECK(run() == run());
}

// 1,000 trials on 100 workers, results in the order trials started: past 200 trials the bad set
// (results and running trials) is followed by SlidingParzen rather than rebuilt.
std::vector<std::pair<TrialConfig, double>> workers_run(ConfigSampler& sampler) {
  std::vector<std::pair<TrialConfig, double>> out;
  std::deque<std::pair<TrialId, TrialConfig>> running;
  for (TrialId t = 0; t < 1000; ++t) {
    running.emplace_back(t, sampler.suggest(t).config);
    if (running.size() < 100 && t < 999) continue;
    while (running.size() >= (t < 999 ? 100u : 1u)) {
      const auto [id, config] = running.front();
      running.pop_front();
      sampler.observe(id, config, 1.0, bowl(config));
      out.emplace_back(config, bowl(config));
    }
  }
  return out;
}

TEST_CASE("with many workers and a large bad set tpe still learns, and repeats itself exactly") {
  const auto run = [] {
    TpeSampler tpe(space_of(kMixed), Mode::Min, 9, {10, 0.1, 24, false});
    return workers_run(tpe);
  };
  const auto first = run();
  CHECK(first == run());
  RandomSampler random(space_of(kMixed), 9);
  const auto drawn = workers_run(random);
  double tpe_loss = 0, random_loss = 0;
  for (std::size_t i = 700; i < 1000; ++i) tpe_loss += first[i].second, random_loss += drawn[i].second;
  CAPTURE(tpe_loss, random_loss);
  CHECK(tpe_loss < 0.5 * random_loss);
}

TEST_CASE("g that follows the bad set suggests what g rebuilt for every suggestion does") {
  // The same run twice: g following the bad set from 200 trials on, and rebuilt every time.
  // The densities differ in their last bits only, and scores within 1e-9 never decide between
  // candidates, so the configs are the same and the log ratios within 1e-9.
  const auto run = [](std::size_t sliding_from) {
    TpeOptions options{10, 0.1, 24, false};
    options.sliding_from = sliding_from;
    TpeSampler tpe(space_of(kMixed), Mode::Min, 9, options);
    std::vector<Suggestion> out;
    std::deque<std::pair<TrialId, TrialConfig>> running;
    for (TrialId t = 0; t < 600; ++t) {
      out.push_back(tpe.suggest(t));
      running.emplace_back(t, out.back().config);
      // 100 workers; every seventh result comes back out of turn, as jobs of unequal length do.
      while (running.size() >= 100) {
        const auto at = t % 7 == 0 ? running.begin() + 50 : running.begin();
        tpe.observe(at->first, at->second, 1.0, bowl(at->second));
        running.erase(at);
      }
    }
    return out;
  };
  const auto followed = run(200), rebuilt = run(1u << 30);
  std::size_t slid = 0;
  for (std::size_t t = 0; t < followed.size(); ++t) {
    CAPTURE(t);
    REQUIRE(followed[t].config == rebuilt[t].config);
    if (!followed[t].why.contains("log_ratio")) continue;
    slid += followed[t].why.at("bad").get<std::size_t>() >= 200;
    for (const auto& [name, ratio] : followed[t].why.at("log_ratio").items()) {
      CHECK(std::abs(ratio.get<double>() - rebuilt[t].why.at("log_ratio").at(name).get<double>()) < 1e-9);
    }
  }
  CHECK(slid > 300);  // most of the run went through the sliding estimators
  TpeOptions too_few{};
  too_few.sliding_from = 50;
  CHECK_THROWS_AS(TpeSampler(space_of(kMixed), Mode::Min, 1, too_few), packtune::Error);
}

TEST_CASE("a trial is suggested once: again, or after it reported, is an error") {
  TpeSampler tpe(space_of(kMixed), Mode::Min, 1, {});
  const auto s = tpe.suggest(0);
  CHECK_THROWS_AS(tpe.suggest(0), packtune::Error);
  tpe.observe(0, s.config, 1.0, 0.5);
  CHECK_THROWS_AS(tpe.suggest(0), packtune::Error);
}

TEST_CASE("the sampler setting: random by default, tpe on request, its keys refused without it") {
  auto context = testing::make_context(1, 9, 20, Mode::Max);
  const auto sampler_of = [&](const json& settings) {
    TunerSettings s(settings, "asha");
    auto sampler = make_sampler(context, s);
    s.finish();
    return sampler;
  };
  CHECK(dynamic_cast<RandomSampler*>(sampler_of(json::object()).get()));
  CHECK(dynamic_cast<TpeSampler*>(sampler_of({{"sampler", "tpe"}, {"gamma", 0.2}, {"multivariate", true},
                                               {"multi_fidelity", "highest_budget"}, {"constant_liar", false}})
                                       .get()));
  CHECK_THROWS_WITH(sampler_of({{"sampler", "bayes"}}),
                    "tuner.sampler: expected one of random, tpe for the asha tuner, got \"bayes\"");
  CHECK_THROWS_WITH(sampler_of({{"gamma", 0.2}}),
                    "tuner.gamma: only the tpe sampler takes it; add \"sampler\": \"tpe\"");
  CHECK_THROWS_WITH(sampler_of({{"sampler", "tpe"}, {"gamma", 1.5}}),
                    "tuner.gamma: expected the good set's share, above 0 and at most 1, got 1.5");
  CHECK_THROWS_WITH(sampler_of({{"constant_liar", false}}),
                    "tuner.constant_liar: only the tpe sampler takes it; add \"sampler\": \"tpe\"");
  CHECK_THROWS_WITH(sampler_of({{"sampler", "tpe"}, {"multi_fidelity", "lowest"}}),
                    Catch::Contains("tuner.multi_fidelity: expected one of furthest, highest_budget"));
  CHECK_THROWS_WITH(sampler_of({{"sampler", "tpe"}, {"candidates", 0}}),
                    Catch::Contains("tuner.candidates: expected an integer from 1"));
}

TEST_CASE("every sampling tuner takes the tpe sampler and says why it chose each config") {
  const std::string name = GENERATE(as<std::string>{}, "random", "sha", "hyperband", "asha", "async_hyperband");
  CAPTURE(name);
  auto context = testing::make_context(1, 9, 40, Mode::Max, {{"sampler", "tpe"}, {"startup_trials", 5}});
  context.seed = 3;
  auto tuner = TunerRegistry::instance().create(name, context);
  testing::HashObjective objective(2);
  std::int64_t modelled = 0, random = 0;
  std::vector<Job> running;
  while (true) {
    // Two workers: a new job only while one is free.
    auto job = running.size() < 2 ? tuner->next_job() : Job::wait();
    if (job.kind == Job::Kind::Start) {
      REQUIRE(job.why.is_object());
      (job.why.contains("random") ? random : modelled) += 1;
      running.push_back(job);
      continue;
    }
    if (job.kind == Job::Kind::Resume) {
      running.push_back(job);
      continue;
    }
    if (running.empty()) break;
    const auto done = running.front();
    running.erase(running.begin());
    tuner->on_result(done.trial, done.budget, objective.evaluate(done.trial, done.config, done.budget));
  }
  CHECK(random >= 5);
  CHECK(modelled > 0);
}
