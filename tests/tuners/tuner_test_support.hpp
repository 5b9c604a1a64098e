#pragma once
// Shared helpers of the tuner tests: contexts, in-memory tables and simulation runs.
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "tuners/simulate/simulator.hpp"
#include "tuners/simulate/table_objective.hpp"
#include "tuners/tuner_registry.hpp"

namespace packtune::tuners::testing {

inline TunerContext make_context(double min_budget, double max_budget, std::int64_t trials,
                                 Mode mode = Mode::Max, nlohmann::json settings = {}) {
  TunerContext c;
  c.space = SearchSpace::from_json(
      nlohmann::json::parse(R"({"lr": {"type": "loguniform", "low": 1e-4, "high": 1e-1}})"));
  c.min_budget = min_budget;
  c.max_budget = max_budget;
  c.max_trials = trials;
  c.mode = mode;
  c.settings = settings.is_null() ? nlohmann::json::object() : settings;
  return c;
}

// rows: {trial, budget, metric}
inline TableObjective make_table(const std::vector<std::tuple<int, double, double>>& rows) {
  std::stringstream csv;
  csv << "trial,budget,metric\n";
  for (const auto& [t, b, m] : rows) csv << t << "," << b << "," << m << "\n";
  return TableObjective::from_stream(csv, "test-table");
}

// Metrics that look random but are a pure function of (seed, trial, budget): a random table
// of any size.
class HashObjective : public Objective {
 public:
  explicit HashObjective(std::uint64_t seed, int distinct = 0) : seed_(seed), distinct_(distinct) {}
  double evaluate(std::int64_t index, const TrialConfig&, double budget) override {
    std::uint64_t x = seed_ * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(index) * 31 +
                      static_cast<std::uint64_t>(budget * 1000);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    // With `distinct` > 0 only that many values occur, so ties are common.
    if (distinct_ > 0) return static_cast<double>(x % static_cast<std::uint64_t>(distinct_));
    return static_cast<double>(x >> 11) * 0x1.0p-53;
  }
  std::string description() const override { return "hash"; }

 private:
  std::uint64_t seed_;
  int distinct_;
};

inline std::vector<SimulationEvent> simulate(Tuner& tuner, Objective& objective, Mode mode,
                                             int workers, SimulationSummary* summary = nullptr,
                                             double report_every = 0) {
  std::vector<SimulationEvent> events;
  Simulator sim(tuner, objective, mode, SimulationOptions{workers, report_every});
  auto s = sim.run([&](const SimulationEvent& e) { events.push_back(e); });
  if (summary) *summary = s;
  return events;
}

// "t1@2" for each start event: the order jobs started in, resumes included.
inline std::vector<std::string> start_order(const std::vector<SimulationEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) {
    if (e.kind != SimulationEvent::Kind::Start) continue;
    std::ostringstream s;
    s << "t" << e.trial << "@" << e.budget;
    out.push_back(s.str());
  }
  return out;
}

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace packtune::tuners::testing
