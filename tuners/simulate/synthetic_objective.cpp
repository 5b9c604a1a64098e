#include "tuners/simulate/synthetic_objective.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace packtune::tuners {
namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double unit(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

std::uint64_t budget_bits(double budget) {
  std::uint64_t bits = 0;
  static_assert(sizeof bits == sizeof budget);
  std::memcpy(&bits, &budget, sizeof bits);
  return bits;
}

constexpr double kPi = 3.14159265358979323846;
constexpr std::uint64_t kSaltAsymptote = 1;
constexpr std::uint64_t kSaltStart = 2;
constexpr std::uint64_t kSaltSpeed = 3;
constexpr std::uint64_t kSaltNoise = 4;

}  // namespace

SyntheticObjective::SyntheticObjective(SearchSpace space, std::uint64_t seed, Mode mode,
                                       double max_budget)
    : space_(std::move(space)), seed_(seed), mode_(mode), max_budget_(max_budget) {
  for (std::size_t p = 0; p < space_.params().size(); ++p) {
    optimum_.push_back(unit(mix(mix(seed_ ^ 0x5eed) + p)));
  }
}

double SyntheticObjective::draw(std::int64_t index, std::uint64_t salt) const {
  return unit(mix(mix(mix(seed_) + static_cast<std::uint64_t>(index)) + salt));
}

double SyntheticObjective::position(const ParamSpec& p, const TrialConfig& config) const {
  const auto it = config.find(p.name);
  if (it == config.end()) return 0.5;
  if (p.kind == ParamSpec::Kind::Choice) {
    const auto at = std::find(p.values.begin(), p.values.end(), it->second);
    if (p.values.size() < 2 || at == p.values.end()) return 0.5;
    return static_cast<double>(at - p.values.begin()) / static_cast<double>(p.values.size() - 1);
  }
  const double x = as_number(it->second, p.name);
  const bool log = p.kind == ParamSpec::Kind::LogUniform;
  const double lo = log ? std::log(p.low) : p.low;
  const double hi = log ? std::log(p.high) : p.high;
  if (hi <= lo) return 0.5;
  return std::clamp(((log ? std::log(x) : x) - lo) / (hi - lo), 0.0, 1.0);
}

double SyntheticObjective::asymptote(std::int64_t index, const TrialConfig& config) const {
  double quality = draw(index, kSaltAsymptote);
  const auto& params = space_.params();
  if (!params.empty()) {
    double distance = 0;
    for (std::size_t p = 0; p < params.size(); ++p) {
      const double d = position(params[p], config) - optimum_[p];
      distance += d * d;
    }
    quality = 0.7 * std::min(1.0, distance / static_cast<double>(params.size())) + 0.3 * quality;
  }
  return 0.05 + 0.45 * quality;
}

double SyntheticObjective::evaluate(std::int64_t index, const TrialConfig& config, double budget) {
  const double a = asymptote(index, config);
  const double start = 0.9 + 0.1 * draw(index, kSaltStart);
  const double tau = max_budget_ * (0.02 + 0.3 * draw(index, kSaltSpeed));
  // Box-Muller from two draws keyed by the budget, so a re-evaluation gives the same value.
  const std::uint64_t key = mix(budget_bits(budget) ^ kSaltNoise);
  const double u1 = std::max(draw(index, key), 1e-300);
  const double u2 = draw(index, key + 1);
  const double noise = 0.01 * std::sqrt(-2 * std::log(u1)) * std::cos(2 * kPi * u2);
  const double loss = a + (start - a) * std::exp(-budget / tau) + noise;
  return mode_ == Mode::Max ? 1 - loss : loss;
}

}  // namespace packtune::tuners
