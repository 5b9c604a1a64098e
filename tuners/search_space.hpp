#pragma once
// The search space of an experiment: one distribution per hyper-parameter.
//
// JSON form (the "space" object of a config):
//   "lr":     {"type": "loguniform", "low": 1e-4, "high": 0.1}
//   "drop":   {"type": "uniform",    "low": 0.0,  "high": 0.5}
//   "depth":  {"type": "randint",    "low": 1,    "high": 3}      (both ends included)
//   "opt":    {"type": "choice",     "values": ["sgd", "adam"]}
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuners/trial_config.hpp"

namespace packtune::tuners {

struct ParamSpec {
  enum class Kind { Uniform, LogUniform, RandInt, Choice };
  std::string name;
  Kind kind = Kind::Uniform;
  double low = 0;
  double high = 0;
  std::vector<ParamValue> values;  // Choice only
};

class SearchSpace {
 public:
  SearchSpace() = default;
  // Throws InputError naming the field ("space.lr.high") and what is expected.
  static SearchSpace from_json(const nlohmann::json& space, const std::string& where = "space");

  void add(ParamSpec spec);
  const std::vector<ParamSpec>& params() const { return params_; }
  bool empty() const { return params_.empty(); }

  // One independent draw of every parameter. Deterministic for a given engine state on any
  // platform: it uses only the raw 64-bit outputs of the engine.
  TrialConfig sample(std::mt19937_64& rng) const;

  // Every combination, for grid search: choice values as listed, randint every integer,
  // uniform/loguniform `points_per_axis` points spread evenly (log-evenly) over the range.
  std::vector<TrialConfig> grid(int points_per_axis) const;

 private:
  std::vector<ParamSpec> params_;  // kept in name order so samples do not depend on JSON order
};

// A uniform draw in [0, 1) from the top 53 bits of one engine output.
double unit_draw(std::mt19937_64& rng);

}  // namespace packtune::tuners
