#include "tuners/parzen_estimator.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "packtune/error.hpp"

namespace packtune::tuners {
namespace {

constexpr double kTwoPi = 6.283185307179586477;
constexpr double kMultivariateBandwidth = 0.2;  // Optuna's SIGMA0_MAGNITUDE
constexpr std::size_t kFlatWeights = 25;        // the newest observations, at full weight
// Kernels more than this far below the mixture's largest term add less than 2^-70 of it:
// below a double's precision, so their exp() is skipped.
constexpr double kNegligible = 50.0;

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

double normal_draw(std::mt19937_64& rng) {
  const double u1 = 1.0 - unit_draw(rng);  // (0, 1]: the log stays finite
  const double u2 = unit_draw(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(kTwoPi * u2);
}

// A draw of N(mu, sigma) inside [low, high], by rejection: a kernel's mean is in the range and
// its bandwidth at most the range, so a draw lands inside with probability >= 0.34.
double truncated_normal_draw(std::mt19937_64& rng, double mu, double sigma, double low, double high) {
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const double x = mu + sigma * normal_draw(rng);
    if (x >= low && x <= high) return x;
  }
  return std::clamp(mu, low, high);
}

std::size_t weighted_index(std::mt19937_64& rng, const std::vector<double>& weights) {
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  double u = unit_draw(rng) * total;
  for (std::size_t i = 0; i + 1 < weights.size(); ++i) {
    if (u < weights[i]) return i;
    u -= weights[i];
  }
  return weights.size() - 1;
}

// Univariate bandwidths: the larger gap to a neighbour, over the means sorted with the range's
// ends around them; the outermost means take their inner gap (Optuna's consider_endpoints off).
std::vector<double> neighbour_gaps(const std::vector<double>& mus, double low, double high) {
  // Sorted as (value, index) pairs: ties keep index order, as a stable sort would.
  std::vector<std::pair<double, std::size_t>> sorted_mus(mus.size());
  for (std::size_t i = 0; i < mus.size(); ++i) sorted_mus[i] = {mus[i], i};
  std::sort(sorted_mus.begin(), sorted_mus.end());
  std::vector<double> with_ends{low};
  for (const auto& m : sorted_mus) with_ends.push_back(m.first);
  with_ends.push_back(high);
  std::vector<double> sorted(mus.size());
  for (std::size_t j = 0; j < mus.size(); ++j) {
    sorted[j] = std::max(with_ends[j + 1] - with_ends[j], with_ends[j + 2] - with_ends[j + 1]);
  }
  if (with_ends.size() >= 4) {
    sorted.front() = with_ends[2] - with_ends[1];
    sorted.back() = with_ends[with_ends.size() - 2] - with_ends[with_ends.size() - 3];
  }
  std::vector<double> sigmas(mus.size());
  for (std::size_t j = 0; j < mus.size(); ++j) sigmas[sorted_mus[j].second] = sorted[j];
  return sigmas;
}

// The mass of N(mu, sigma) inside [low, high]. Beyond 8.5 sigma from both ends it is 1 to
// double precision (the tails hold under 1e-17), so the two erfc calls are skipped.
double mass_in_range(double mu, double sigma, double low, double high) {
  const double above = (high - mu) / sigma, below = (low - mu) / sigma;
  if (above > 8.5 && below < -8.5) return 1.0;
  return normal_cdf(above) - normal_cdf(below);
}

// The log of N(mu, sigma)'s mass on [x - 0.5, x + 0.5]. Far out in a tail the difference of
// two CDFs rounds to 0; there the density at x (the cell is 1 wide) stands in for it.
double log_cell_mass(double x, double mu, double sigma) {
  const double upper = (x + 0.5 - mu) / sigma, lower = (x - 0.5 - mu) / sigma;
  // In the upper tail, 1 - CDF keeps the precision the CDF loses.
  const double mass = lower > 0 ? normal_cdf(-lower) - normal_cdf(-upper) : normal_cdf(upper) - normal_cdf(lower);
  if (mass > 1e-300) return std::log(mass);
  const double z = (x - mu) / sigma;
  return -0.5 * z * z - std::log(sigma) - 0.5 * std::log(kTwoPi);
}

}  // namespace

std::vector<double> recency_weights(std::size_t n) {
  if (n < kFlatWeights) return std::vector<double>(n, 1.0);
  std::vector<double> w(n, 1.0);
  // numpy.linspace(1/n, 1, n - 25): evenly from 1/n to 1, both ends included.
  const std::size_t ramp = n - kFlatWeights;
  const double start = 1.0 / static_cast<double>(n);
  for (std::size_t i = 0; i < ramp; ++i) {
    w[i] = ramp == 1 ? start : start + (1.0 - start) * static_cast<double>(i) / static_cast<double>(ramp - 1);
  }
  return w;
}

ParzenAxis parzen_axis(const ParamSpec& param) {
  ParzenAxis axis;
  switch (param.kind) {
    case ParamSpec::Kind::Choice:
      axis.categorical = true;
      axis.choices = param.values.size();
      break;
    case ParamSpec::Kind::Uniform:
      axis.low = param.low;
      axis.high = param.high;
      break;
    case ParamSpec::Kind::LogUniform:
      axis.low = std::log(param.low);
      axis.high = std::log(param.high);
      break;
    case ParamSpec::Kind::RandInt:
      axis.low = param.low - 0.5;
      axis.high = param.high + 0.5;
      axis.discrete = true;
      break;
  }
  return axis;
}

double to_axis(const ParamSpec& param, const ParamValue& value) {
  switch (param.kind) {
    case ParamSpec::Kind::Choice: {
      const auto it = std::find(param.values.begin(), param.values.end(), value);
      if (it == param.values.end()) {
        throw Error("tpe: " + param.name + " = " + to_string(value) + " is not one of its choices");
      }
      return static_cast<double>(it - param.values.begin());
    }
    case ParamSpec::Kind::LogUniform:
      return std::log(as_number(value, param.name));
    case ParamSpec::Kind::Uniform:
    case ParamSpec::Kind::RandInt:
      return as_number(value, param.name);
  }
  return 0;
}

ParamValue from_axis(const ParamSpec& param, double x) {
  switch (param.kind) {
    case ParamSpec::Kind::Choice:
      return param.values[static_cast<std::size_t>(x)];
    case ParamSpec::Kind::LogUniform:
      return std::clamp(std::exp(x), param.low, param.high);
    case ParamSpec::Kind::Uniform:
      return std::clamp(x, param.low, param.high);
    case ParamSpec::Kind::RandInt:
      return std::clamp(static_cast<std::int64_t>(std::llround(x)), static_cast<std::int64_t>(param.low),
                        static_cast<std::int64_t>(param.high));
  }
  return ParamValue{};
}

ParzenEstimator::ParzenEstimator(const std::vector<ParzenAxis>& axes, const std::vector<std::vector<double>>& columns,
                                 const ParzenOptions& options)
    : axes_(axes), prior_weight_(options.prior_weight) {
  if (!(prior_weight_ > 0)) throw Error("tpe: the prior's weight must be positive");
  if (columns.size() != axes_.size()) throw Error("tpe: one column of observations per parameter");
  const std::size_t n = columns.empty() ? 0 : columns.front().size();
  const std::size_t kernels = n + 1;  // the prior last
  auto weights = recency_weights(n);
  weights.push_back(prior_weight_);
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  for (double w : weights) log_weights_.push_back(std::log(w / total));

  base_ = log_weights_;
  mu_.resize(axes_.size());
  sigma_.resize(axes_.size());
  inv_sigma_.resize(axes_.size());
  log_hit_.assign(axes_.size(), 0);
  log_miss_.assign(axes_.size(), 0);
  constant_.assign(axes_.size(), false);
  const double dims = static_cast<double>(axes_.size());
  for (std::size_t a = 0; a < axes_.size(); ++a) {
    const auto& axis = axes_[a];
    auto& mu = mu_[a];
    if (columns[a].size() != n) throw Error("tpe: columns of observations differ in length");
    mu.reserve(n + 1);
    mu.assign(columns[a].begin(), columns[a].end());
    if (axis.categorical) {
      // Optuna's rows: prior_weight / kernels on every choice, 1 more on the observed one.
      const double c = static_cast<double>(axis.choices);
      const double spread = prior_weight_ / static_cast<double>(kernels);
      log_hit_[a] = std::log((1.0 + spread) / (1.0 + c * spread));
      log_miss_[a] = std::log(spread / (1.0 + c * spread));
      mu.push_back(-1);  // the prior: uniform over the choices
      continue;
    }
    const double range = axis.high - axis.low;
    if (!(range > 0)) {
      // A loguniform whose ends round to one double: every value is the same, and says nothing.
      constant_[a] = true;
      mu.push_back(axis.low);
      sigma_[a].assign(kernels, 1.0);
      inv_sigma_[a].assign(kernels, 0.0);
      continue;
    }
    mu.push_back(0.5 * (axis.low + axis.high));
    std::vector<double> sigma;
    if (options.multivariate) {
      const double s = kMultivariateBandwidth * std::pow(std::max<double>(static_cast<double>(n), 1.0), -1.0 / (dims + 4.0)) * range;
      sigma.assign(kernels, s);
    } else {
      sigma = neighbour_gaps(mu, axis.low, axis.high);
    }
    const double min_sigma = range / std::min(100.0, 1.0 + static_cast<double>(kernels));
    for (auto& s : sigma) s = std::clamp(s, min_sigma, range);
    sigma.back() = range;
    auto& inverse = inv_sigma_[a];
    for (std::size_t k = 0; k < kernels; ++k) {
      const double mass = mass_in_range(mu[k], sigma[k], axis.low, axis.high);
      // A discrete axis adds each cell's log mass at evaluation; a continuous one its density.
      base_[k] -= std::log(mass) + (axis.discrete ? 0.0 : std::log(sigma[k]) + 0.5 * std::log(kTwoPi));
      inverse.push_back(1.0 / sigma[k]);
    }
    sigma_[a] = std::move(sigma);
  }
}

std::vector<std::vector<double>> ParzenEstimator::sample(std::mt19937_64& rng, std::size_t count) const {
  std::vector<double> weights;
  for (double lw : log_weights_) weights.push_back(std::exp(lw));
  std::vector<std::vector<double>> out;
  out.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t k = weighted_index(rng, weights);
    std::vector<double> x(axes_.size());
    for (std::size_t a = 0; a < axes_.size(); ++a) {
      const auto& axis = axes_[a];
      if (constant_[a]) {
        x[a] = axis.low;
        continue;
      }
      if (!axis.categorical) {
        x[a] = truncated_normal_draw(rng, mu_[a][k], sigma_[a][k], axis.low, axis.high);
        if (axis.discrete) x[a] = std::clamp(std::round(x[a]), axis.low + 0.5, axis.high - 0.5);
        continue;
      }
      std::vector<double> p(axis.choices, 1.0);  // the prior: uniform
      if (mu_[a][k] >= 0) {
        std::fill(p.begin(), p.end(), std::exp(log_miss_[a]));
        p[static_cast<std::size_t>(mu_[a][k])] = std::exp(log_hit_[a]);
      }
      x[a] = static_cast<double>(weighted_index(rng, p));
    }
    out.push_back(std::move(x));
  }
  return out;
}

double ParzenEstimator::log_density(const std::vector<double>& x) const {
  // log-sum-exp over the kernels: each term built axis by axis over contiguous arrays, then
  // one exp per term that can matter.
  thread_local std::vector<double> terms;
  terms = base_;
  const std::size_t n = terms.size();
  for (std::size_t a = 0; a < axes_.size(); ++a) {
    const double* mu = mu_[a].data();
    if (axes_[a].categorical) {
      const double prior = -std::log(static_cast<double>(axes_[a].choices));
      for (std::size_t k = 0; k < n; ++k) terms[k] += mu[k] < 0 ? prior : mu[k] == x[a] ? log_hit_[a] : log_miss_[a];
      continue;
    }
    if (constant_[a]) continue;
    const double* inverse = inv_sigma_[a].data();
    const double xa = x[a];
    if (axes_[a].discrete) {
      for (std::size_t k = 0; k < n; ++k) terms[k] += log_cell_mass(xa, mu[k], sigma_[a][k]);
      continue;
    }
    for (std::size_t k = 0; k < n; ++k) {
      const double z = (xa - mu[k]) * inverse[k];
      terms[k] -= 0.5 * z * z;
    }
  }
  const double top = *std::max_element(terms.begin(), terms.end());
  double sum = 0;
  for (double t : terms) {
    if (t > top - kNegligible) sum += std::exp(t - top);
  }
  return top + std::log(sum);
}

}  // namespace packtune::tuners
