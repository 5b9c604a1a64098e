#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "packtune/error.hpp"
#include "../tuner_test_support.hpp"
#include "tuners/schedulers/asha_rung.hpp"
#include "tuners/schedulers/brackets.hpp"

using namespace packtune::tuners;
using namespace packtune::tuners::testing;

namespace {

// eta = 2, budgets 1, 2, 4; four trials.
TableObjective small_table() {
  return make_table({{0, 1, 0.5}, {1, 1, 0.8}, {2, 1, 0.3}, {3, 1, 0.9},
                     {0, 2, 0.45}, {1, 2, 0.85}, {2, 2, 0.2}, {3, 2, 0.7},
                     {0, 4, 0.4}, {1, 4, 0.9}, {2, 4, 0.1}, {3, 4, 0.75}});
}

// ASHA exactly as the paper states it (docs/tuners.md), with no cleverness: every request sorts
// every rung. The real tuner must hand out the same jobs. `eager`: a non-empty rung's quota is
// at least one (tuner setting "eager_promotion").
class ReferenceAsha : public Tuner {
 public:
  ReferenceAsha(const TunerContext& c, std::int64_t eta, std::vector<int> rates, bool eager = false)
      : c_(c), eta_(eta), rates_(std::move(rates)), eager_(eager) {
    top_ = max_early_stopping_rate(c.min_budget, c.max_budget, eta);
    for (int s : rates_) budgets_.push_back(asha_rung_budgets(c.min_budget, c.max_budget, eta, s));
    results_.resize(rates_.size(), std::vector<std::vector<std::pair<double, TrialId>>>(top_ + 1));
    promoted_.resize(rates_.size(), std::vector<std::set<TrialId>>(top_ + 1));
  }
  Job next_job() override {
    for (int level = top_ - 1; level >= 0; --level) {
      int best_bracket = -1;
      std::pair<double, TrialId> best{0, -1};
      for (std::size_t b = 0; b < rates_.size(); ++b) {
        if (level < rates_[b]) continue;
        const auto k = static_cast<std::size_t>(level - rates_[b]);
        auto rung = results_[b][k];
        std::sort(rung.begin(), rung.end(), [&](const auto& x, const auto& y) {
          return ranks_before(x.first, x.second, y.first, y.second, c_.mode);
        });
        auto quota = static_cast<std::size_t>(static_cast<std::int64_t>(rung.size()) / eta_);
        if (eager_ && !rung.empty()) quota = std::max<std::size_t>(quota, 1);
        for (std::size_t i = 0; i < quota; ++i) {
          if (promoted_[b][k].count(rung[i].second) || std::isnan(rung[i].first)) continue;
          if (best_bracket < 0 ||
              ranks_before(rung[i].first, rung[i].second, best.first, best.second, c_.mode)) {
            best = rung[i];
            best_bracket = static_cast<int>(b);
          }
          break;
        }
      }
      if (best_bracket >= 0) {
        const auto k = static_cast<std::size_t>(level - rates_[best_bracket]);
        promoted_[best_bracket][k].insert(best.second);
        where_[best.second] = {best_bracket, static_cast<int>(k) + 1};
        ++running_;
        return Job::resume(best.second, {}, budgets_[best_bracket][k + 1]);
      }
    }
    if (created_ < c_.max_trials) {
      const TrialId id = created_++;
      const int b = static_cast<int>(id % static_cast<TrialId>(rates_.size()));
      where_[id] = {b, 0};
      ++running_;
      return Job::start(id, {}, budgets_[b][0]);
    }
    return running_ ? Job::wait() : Job::finished();
  }
  void on_result(TrialId trial, double, double metric) override {
    --running_;
    const auto [b, k] = where_.at(trial);
    results_[b][k].emplace_back(metric, trial);
  }
  std::string name() const override { return "reference"; }

 private:
  TunerContext c_;
  std::int64_t eta_;
  std::vector<int> rates_;
  bool eager_;
  int top_ = 0;
  std::vector<std::vector<double>> budgets_;
  std::vector<std::vector<std::vector<std::pair<double, TrialId>>>> results_;
  std::vector<std::vector<std::set<TrialId>>> promoted_;
  std::map<TrialId, std::pair<int, int>> where_;
  TrialId created_ = 0;
  std::int64_t running_ = 0;
};

std::vector<std::tuple<int, TrialId, double>> jobs_of(const std::vector<SimulationEvent>& events) {
  std::vector<std::tuple<int, TrialId, double>> out;
  for (const auto& e : events) {
    if (e.kind == SimulationEvent::Kind::Start) out.emplace_back(e.resume, e.trial, e.budget);
  }
  return out;
}

}  // namespace

TEST_CASE("ASHA with one worker starts jobs in the hand-checked order, both modes") {
  struct Case {
    Mode mode;
    std::vector<std::string> order;
  };
  const Case cases[] = {
      // t0 (0.5), t1 (0.8): t1 is the best 1 of 2 -> promoted; then t2, t3 (0.9) -> t3
      // promoted; rung 2 = {t1 0.85, t3 0.7}: t1 is the best 1 of 2 -> to budget 4.
      {Mode::Max, {"t0@1", "t1@1", "t1@2", "t2@1", "t3@1", "t3@2", "t1@4"}},
      // t0 (0.5) beats t1 (0.8) -> t0@2 (0.45); t2 (0.3) is now the best 1 of 3 -> t2@2
      // (0.2), which beats t0's 0.45 in rung 2 -> t2@4; t3 (0.9) makes the quota 2 =
      // {t2, t0}, both promoted already.
      {Mode::Min, {"t0@1", "t1@1", "t0@2", "t2@1", "t2@2", "t2@4", "t3@1"}},
  };
  for (const auto& c : cases) {
    INFO("mode " << to_string(c.mode));
    auto table = small_table();
    auto tuner = TunerRegistry::instance().create("asha", make_context(1, 4, 4, c.mode, {{"eta", 2}}));
    CHECK(start_order(simulate(*tuner, table, c.mode, 1)) == c.order);
  }
}

TEST_CASE("eager ASHA lets the best so far go on while fewer than eta results are in") {
  // eta 2, one worker, Max. t0@1 (0.5) is the best of one -> t0@2 (0.45), alone -> t0@4.
  // t1@1 (0.8): the best 1 of 2 -> t1@2 (0.85), the best 1 of 2 -> t1@4. t2@1 (0.3): the
  // quota of 3 is 1, t1, promoted already. t3@1 (0.9): quota 2 = {t3, t1} -> t3@2 (0.7),
  // third of 3 at budget 2.
  auto table = small_table();
  auto tuner = TunerRegistry::instance().create(
      "asha", make_context(1, 4, 4, Mode::Max, {{"eta", 2}, {"eager_promotion", true}}));
  CHECK(start_order(simulate(*tuner, table, Mode::Max, 1)) ==
        std::vector<std::string>{"t0@1", "t0@2", "t0@4", "t1@1", "t1@2", "t1@4", "t2@1", "t3@1", "t3@2"});

  SECTION("the rung's own rule") {
    AshaRung rung(Mode::Max, 3, true);
    rung.add(7, 0.4);
    CHECK(rung.best_promotable()->trial == 7);
    rung.add(8, 0.6);
    CHECK(rung.best_promotable()->trial == 8);
    CHECK_FALSE(rung.in_top(7));
    AshaRung strict(Mode::Max, 3);
    strict.add(7, 0.4);
    strict.add(8, 0.6);
    CHECK_FALSE(strict.best_promotable());
  }
}

TEST_CASE("ASHA promotes from the highest rung first when several promotions are open") {
  // A driver that delivers several results before asking again (the simulator never does)
  // can leave promotable trials in two rungs at once.
  auto tuner = TunerRegistry::instance().create("asha", make_context(1, 4, 6, Mode::Max, {{"eta", 2}}));
  for (int i = 0; i < 4; ++i) REQUIRE(tuner->next_job().kind == Job::Kind::Start);
  tuner->on_result(0, 1, 0.9);
  tuner->on_result(1, 1, 0.8);  // rung 1: quota 1 = {t0}
  const Job up = tuner->next_job();
  CHECK((up.kind == Job::Kind::Resume && up.trial == 0 && up.budget == 2));
  CHECK(tuner->next_job().trial == 4);  // nothing else promotable: a new trial
  tuner->on_result(2, 1, 0.1);
  tuner->on_result(3, 1, 0.85);  // quota 2 = {t0, t3}
  CHECK(tuner->next_job().trial == 3);
  tuner->on_result(0, 2, 0.3);
  tuner->on_result(3, 2, 0.6);   // rung 2: quota 1 = {t3}
  tuner->on_result(4, 1, 0.95);  // rung 1: quota 2 = {t4, t0}; t4 is promotable too
  const Job top = tuner->next_job();
  CHECK((top.kind == Job::Kind::Resume && top.trial == 3 && top.budget == 4));
  const Job next = tuner->next_job();
  CHECK((next.kind == Job::Kind::Resume && next.trial == 4 && next.budget == 2));
}

TEST_CASE("ASHA breaks ties by the lower trial id and never promotes a failed trial") {
  auto table = make_table({{0, 1, 0.5}, {1, 1, 0.7}, {2, 1, 0.7}, {3, 1, 0.7},
                           {0, 3, 0.1}, {1, 3, 0.2}, {2, 3, 0.3}, {3, 3, 0.4}});
  // eta 3: after three results the quota is 1; t1 and t2 tie at 0.7 -> t1 goes first.
  auto tuner = TunerRegistry::instance().create("asha", make_context(1, 3, 4, Mode::Max, {{"eta", 3}}));
  CHECK(start_order(simulate(*tuner, table, Mode::Max, 1)) ==
        std::vector<std::string>{"t0@1", "t1@1", "t2@1", "t1@3", "t3@1"});

  AshaRung rung(Mode::Min, 2);
  rung.add(0, std::nan(""));
  rung.add(1, std::nan(""));
  CHECK_FALSE(rung.best_promotable());
  rung.add(2, 5.0);
  rung.add(3, 6.0);
  REQUIRE(rung.best_promotable());
  CHECK(rung.best_promotable()->trial == 2);
}

TEST_CASE("ASHA's minimum early-stopping rate s moves the bottom rung up") {
  auto table = small_table();
  auto tuner = TunerRegistry::instance().create(
      "asha", make_context(1, 4, 4, Mode::Max, {{"eta", 2}, {"s", 1}}));
  const auto events = simulate(*tuner, table, Mode::Max, 1);
  // Rungs 2 and 4: t0 (0.45), t1 (0.85) -> t1@4; t2 (0.2), t3 (0.7) -> quota 2 = {t1, t3}.
  CHECK(start_order(events) ==
        std::vector<std::string>{"t0@2", "t1@2", "t1@4", "t2@2", "t3@2", "t3@4"});
}

TEST_CASE("ASHA matches the plain reading of its rule on random tables, any workers") {
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const Mode mode = seed % 2 ? Mode::Max : Mode::Min;
    const std::int64_t eta = 2 + static_cast<std::int64_t>(seed % 3);
    const int workers = 1 + static_cast<int>(seed % 7);
    const std::int64_t trials = 20 + static_cast<std::int64_t>(seed * 7 % 90);
    const bool async = seed % 4 == 0;
    const bool eager = seed % 3 == 1;
    const double max_budget = std::pow(static_cast<double>(eta), 3 + seed % 2);
    auto context = make_context(1, max_budget, trials, mode, {{"eta", eta}});
    if (eager) context.settings["eager_promotion"] = true;
    const int s = async ? 0 : static_cast<int>(seed % 3 == 0);
    if (!async) context.settings["s"] = s;
    auto real = TunerRegistry::instance().create(async ? "async_hyperband" : "asha", context);
    std::vector<int> rates;
    for (int r = 0; r <= (async ? max_early_stopping_rate(1, max_budget, eta) : -1); ++r) rates.push_back(r);
    if (!async) rates = {s};
    ReferenceAsha reference(context, eta, rates, eager);
    HashObjective objective(seed, seed % 5 == 0 ? 4 : 0);  // every 5th: many ties
    INFO("seed " << seed << " eta " << eta << " workers " << workers << " eager " << eager);
    CHECK(jobs_of(simulate(*real, objective, mode, workers)) ==
          jobs_of(simulate(reference, objective, mode, workers)));
  }
}

TEST_CASE("ASHA never promotes a trial from outside the top 1/eta of its rung at that time") {
  for (std::uint64_t seed = 100; seed < 130; ++seed) {
    const Mode mode = seed % 2 ? Mode::Max : Mode::Min;
    const std::int64_t eta = 2 + static_cast<std::int64_t>(seed % 3);
    auto tuner = TunerRegistry::instance().create(
        "asha", make_context(1, std::pow(eta, 3), 150, mode, {{"eta", eta}}));
    HashObjective objective(seed, seed % 3 == 0 ? 5 : 0);
    const auto events = simulate(*tuner, objective, mode, 1 + static_cast<int>(seed % 8));
    std::map<double, std::vector<std::pair<double, TrialId>>> rungs;  // by budget
    std::map<TrialId, double> reached;
    std::int64_t promotions = 0;
    for (const auto& e : events) {
      if (e.kind == SimulationEvent::Kind::Result) {
        rungs[e.budget].emplace_back(e.metric, e.trial);
        reached[e.trial] = e.budget;
        continue;
      }
      if (!e.resume) continue;
      ++promotions;
      const auto& rung = rungs.at(reached.at(e.trial));
      std::int64_t better_than_it = 0;
      double mine = 0;
      for (const auto& [m, t] : rung) {
        if (t == e.trial) mine = m;
      }
      for (const auto& [m, t] : rung) better_than_it += ranks_before(m, t, mine, e.trial, mode);
      INFO("seed " << seed << " trial " << e.trial);
      CHECK(better_than_it < static_cast<std::int64_t>(rung.size()) / eta);
    }
    CHECK(promotions > 10);
  }
}

TEST_CASE("async Hyperband spreads new trials over its brackets in turn") {
  auto tuner = TunerRegistry::instance().create(
      "async_hyperband", make_context(1, 9, 6, Mode::Max, {{"eta", 3}}));
  std::vector<double> budgets;
  for (int i = 0; i < 6; ++i) {
    const Job job = tuner->next_job();
    REQUIRE(job.kind == Job::Kind::Start);
    budgets.push_back(job.budget);
  }
  CHECK(budgets == std::vector<double>{1, 3, 9, 1, 3, 9});
  CHECK(tuner->next_job().kind == Job::Kind::Wait);

  auto two = TunerRegistry::instance().create(
      "async_hyperband", make_context(1, 9, 3, Mode::Max, {{"eta", 3}, {"brackets", 2}}));
  CHECK(two->next_job().budget == 1);
  CHECK(two->next_job().budget == 3);
  CHECK(two->next_job().budget == 1);
}

TEST_CASE("ASHA waits at the trial limit and finishes when nothing runs") {
  auto tuner = TunerRegistry::instance().create("asha", make_context(1, 9, 2, Mode::Max));
  const Job a = tuner->next_job();
  const Job b = tuner->next_job();
  CHECK(a.kind == Job::Kind::Start);
  CHECK(b.kind == Job::Kind::Start);
  CHECK(a.config != b.config);
  CHECK(tuner->next_job().kind == Job::Kind::Wait);
  tuner->on_result(a.trial, 1, 0.3);
  CHECK(tuner->next_job().kind == Job::Kind::Wait);
  tuner->on_result(b.trial, 1, 0.4);
  CHECK(tuner->next_job().kind == Job::Kind::Finished);  // 2 results, quota floor(2/3) = 0
}

TEST_CASE("ASHA and async Hyperband check their settings") {
  auto& registry = TunerRegistry::instance();
  const auto error = [&](const char* name, nlohmann::json settings, std::int64_t trials = 10) {
    return error_of([&] { registry.create(name, make_context(1, 81, trials, Mode::Max, settings)); });
  };
  CHECK_THAT(error("asha", {{"eta", 1}}), Catch::Contains("tuner.eta") && Catch::Contains(">= 2"));
  CHECK_THAT(error("asha", {{"eta", 2.5}}), Catch::Contains("tuner.eta"));
  CHECK_THAT(error("asha", {{"eta", "3"}}), Catch::Contains("tuner.eta"));
  CHECK_THAT(error("asha", {{"s", 5}}), Catch::Contains("tuner.s") && Catch::Contains("0 to 4"));
  CHECK_THAT(error("asha", {{"s", -1}}), Catch::Contains("tuner.s"));
  CHECK_THAT(error("asha", {{"brackets", 2}}),
             Catch::Contains("tuner.brackets") && Catch::Contains("unknown key") &&
                 Catch::Contains("eta, s"));
  CHECK_THAT(error("async_hyperband", {{"brackets", 6}}), Catch::Contains("tuner.brackets"));
  CHECK_THAT(error("async_hyperband", {{"s", 1}}), Catch::Contains("tuner.s"));
  CHECK_THAT(error("asha", {}, 0), Catch::Contains("tuner.trials") && Catch::Contains("at least 1"));
  CHECK_THAT(error("asha", {}, -3), Catch::Contains("tuner.trials"));
  CHECK_THAT(error_of([&] { registry.create("asha", make_context(5, 1, 10)); }),
             Catch::Contains("budget.min"));
  CHECK_THAT(error_of([&] { registry.create("asha", make_context(0, 1, 10)); }),
             Catch::Contains("budget.min") && Catch::Contains("positive"));
  CHECK_THAT(error("async_hyperband", {{"eager_promotion", "yes"}}),
             Catch::Contains("tuner.eager_promotion") && Catch::Contains("true or false"));
  CHECK(error("asha", {{"eta", 3.0}, {"s", 2}}) == "no error");
  CHECK(error("async_hyperband", {{"eager_promotion", false}}) == "no error");
}

TEST_CASE("too few trials for ASHA's top rung say so, and enough trials always reach it") {
  // The example that showed it: 6 trials, eta 3, rungs 1.5 / 4.5 / 13.5 ended at 4.5.
  const auto warnings_of = [](const char* name, std::int64_t trials, nlohmann::json settings) {
    return TunerRegistry::instance().create(name, make_context(1.5, 13.5, trials, Mode::Max, settings))->warnings();
  };
  const auto six = warnings_of("asha", 6, {{"eta", 3}});
  REQUIRE(six.size() == 1);
  CHECK_THAT(six[0], Catch::Contains("tuner.trials 6 may end the run before any trial trains to budget 13.5") &&
                         Catch::Contains("only from 9 trials on") && Catch::Contains("sure of budget 4.5"));
  CHECK(warnings_of("asha", 9, {{"eta", 3}}).empty());
  CHECK(warnings_of("asha", 6, {{"eta", 3}, {"eager_promotion", true}}).empty());
  // Asynchronous Hyperband's last bracket starts at the max budget: one trial there suffices.
  CHECK(warnings_of("async_hyperband", 3, {{"eta", 3}}).empty());
  CHECK(warnings_of("async_hyperband", 2, {{"eta", 3}}).size() == 1);
  // 41 rungs: the trials it would take are computed, not counted up to.
  const auto wide = TunerRegistry::instance()
                        .create("asha", make_context(1, std::pow(2.0, 40), 10, Mode::Max, {{"eta", 2}}))
                        ->warnings();
  REQUIRE(wide.size() == 1);
  CHECK_THAT(wide[0], Catch::Contains("only from 1099511627776 trials on"));

  // The oracle is the simulation: without a warning, every run reaches the max budget,
  // whatever the results and the workers. With a warning it may or may not: a trial promoted
  // early, while it led a rung, leaves room for more when later ones beat it. On a table
  // where the first trials stay best, 6 trials stop at 4.5, as the ResNet run did.
  for (std::uint64_t seed = 200; seed < 240; ++seed) {
    const std::int64_t eta = 2 + static_cast<std::int64_t>(seed % 3);
    const double max_budget = std::pow(eta, 2 + static_cast<int>(seed % 2));
    const std::int64_t trials = 1 + static_cast<std::int64_t>(seed % 30);
    const auto context = make_context(1, max_budget, trials, Mode::Max, {{"eta", eta}});
    auto tuner = TunerRegistry::instance().create("asha", context);
    const bool warned = !tuner->warnings().empty();
    HashObjective objective(seed, 0);
    double reached = 0;
    for (const auto& e : simulate(*tuner, objective, Mode::Max, 1 + static_cast<int>(seed % 5))) {
      if (e.kind == SimulationEvent::Kind::Result) reached = std::max(reached, e.budget);
    }
    INFO("seed " << seed << ", eta " << eta << ", trials " << trials);
    if (!warned) CHECK(reached == max_budget);
    // A warning means the floor(n/eta) chain runs out: fewer than eta^rungs trials.
    CHECK(warned == (trials < static_cast<std::int64_t>(std::llround(max_budget))));
  }
  auto six_trials = TunerRegistry::instance().create("asha", make_context(1.5, 13.5, 6, Mode::Max, {{"eta", 3}}));
  std::vector<std::tuple<int, double, double>> rows;
  for (int t = 0; t < 6; ++t) {
    for (const double budget : {1.5, 4.5, 13.5}) rows.emplace_back(t, budget, 0.8 - 0.01 * t + budget / 100);
  }
  auto table = make_table(rows);
  double six_reached = 0;
  for (const auto& e : simulate(*six_trials, table, Mode::Max, 2)) {
    if (e.kind == SimulationEvent::Kind::Result) six_reached = std::max(six_reached, e.budget);
  }
  CHECK(six_reached == 4.5);
}
