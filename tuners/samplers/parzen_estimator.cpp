#include "tuners/samplers/parzen_estimator.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "packtune/error.hpp"
#include "tuners/samplers/stable_order.hpp"

namespace packtune::tuners {
namespace {

constexpr double kTwoPi = 6.283185307179586477;
constexpr double kHalfLogTwoPi = 0.918938533204672741780;
constexpr double kMultivariateBandwidth = 0.2;  // Optuna's SIGMA0_MAGNITUDE
constexpr std::size_t kBlock = 16;  // kernels per block of a Line

// How far below the largest of `terms` log terms a term may be left out of their log-sum-exp.
// Each one left out is below 2^-54 / terms of the largest, so all of them together add less
// than 2^-54 of the largest term, and so of the sum (which that term alone reaches): the sum
// moves by under a quarter of a unit in its last place and its log by under 2^-54, less than
// the rounding of the sum itself. Left out or not, the result is the same double, to within
// rounding; for 1,000 kernels the cutoff is 44.3.
double negligible_below(std::size_t terms) {
  return std::log(static_cast<double>(std::max<std::size_t>(terms, 1))) + 54.0 * std::log(2.0);
}

// The log-sum-exp of `terms`, whose largest is `top`, leaving out those `negligible` below it.
double log_sum_exp(const double* terms, std::size_t n, double top, double negligible) {
  double sum = 0;
  const double floor = top - negligible;
  for (std::size_t k = 0; k < n; ++k) {
    if (terms[k] > floor) sum += std::exp(terms[k] - top);
  }
  return top + std::log(sum);
}

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

// Univariate bandwidths: the larger gap to a neighbour, over the means sorted (`order`) with
// the range's ends around them; the outermost means take their inner gap (Optuna's
// consider_endpoints off).
std::vector<double> neighbour_gaps(const std::vector<double>& mus, const std::vector<std::uint32_t>& order,
                                   double low, double high) {
  std::vector<double> with_ends{low};
  with_ends.reserve(mus.size() + 2);
  for (const auto i : order) with_ends.push_back(mus[i]);
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
  for (std::size_t j = 0; j < mus.size(); ++j) sigmas[order[j]] = sorted[j];
  return sigmas;
}

// The log of N(mu, sigma)'s mass on [x - 0.5, x + 0.5]. Far out in a tail the difference of
// two CDFs rounds to 0; there the density at x (the cell is 1 wide) stands in for it.
double log_cell_mass(double x, double mu, double sigma) {
  const double upper = (x + 0.5 - mu) / sigma, lower = (x - 0.5 - mu) / sigma;
  // In the upper tail, 1 - CDF keeps the precision the CDF loses.
  const double mass = lower > 0 ? normal_cdf(-lower) - normal_cdf(-upper) : normal_cdf(upper) - normal_cdf(lower);
  if (mass > 1e-300) return std::log(mass);
  const double z = (x - mu) / sigma;
  return -0.5 * z * z - std::log(sigma) - kHalfLogTwoPi;
}

// An upper bound on a discrete kernel's log cell mass, less its quadratic fall-off: the mass
// is at most 1, and at most the cell's width (1) times the density's peak 1 / (sigma sqrt(2 pi)).
double cell_peak(double sigma) { return std::max(0.0, -std::log(sigma) - kHalfLogTwoPi); }

}  // namespace

double mass_in_range(double mu, double sigma, double low, double high) {
  // A tail beyond 8.5 sigma holds under 1e-17, so its CDF rounds to 0 or 1 and its erfc call
  // is skipped.
  constexpr double kTail = 8.5;
  return (high - mu > kTail * sigma ? 1.0 : normal_cdf((high - mu) / sigma)) -
         (mu - low > kTail * sigma ? 0.0 : normal_cdf((low - mu) / sigma));
}

std::vector<double> recency_weights(std::size_t n) {
  if (n < kRecencyFlat) return std::vector<double>(n, 1.0);
  std::vector<double> w(n, 1.0);
  // numpy.linspace(1/n, 1, n - 25): evenly from 1/n to 1, both ends included.
  const std::size_t ramp = n - kRecencyFlat;
  const double start = 1.0 / static_cast<double>(n);
  for (std::size_t i = 0; i < ramp; ++i) {
    w[i] = ramp == 1 ? start : start + (1.0 - start) * static_cast<double>(i) / static_cast<double>(ramp - 1);
  }
  return w;
}

ParzenEstimator::ParzenEstimator(const std::vector<ParzenAxis>& axes, const std::vector<std::vector<double>>& columns,
                                 const ParzenOptions& options)
    : axes_(axes), prior_weight_(options.prior_weight) {
  if (!(prior_weight_ > 0)) throw Error("tpe: the prior's weight must be positive");
  if (columns.size() != axes_.size()) throw Error("tpe: one column of observations per parameter");
  const std::size_t n = columns.empty() ? 0 : columns.front().size();
  const std::size_t kernels = n + 1;  // the prior last
  negligible_ = negligible_below(kernels);
  // The normalised weights depend on n and the prior's weight alone. A sampler builds
  // estimators of the same two sizes again and again (the good set and the capped bad set),
  // so the last two sizes' weights and their logs are kept rather than a log taken per kernel.
  struct Weights {
    std::size_t n = 0;
    double prior = 0;
    std::vector<double> weights, log_weights;
  };
  thread_local std::array<Weights, 2> recent;
  auto* hit = std::find_if(recent.begin(), recent.end(), [&](const Weights& w) {
    return !w.weights.empty() && w.n == n && w.prior == prior_weight_;
  });
  if (hit == recent.end()) {
    std::swap(recent[0], recent[1]);
    hit = &recent[0];
    hit->n = n;
    hit->prior = prior_weight_;
    hit->weights = recency_weights(n);
    hit->weights.push_back(prior_weight_);
    const double total = std::accumulate(hit->weights.begin(), hit->weights.end(), 0.0);
    hit->log_weights.clear();
    for (auto& w : hit->weights) {
      w /= total;
      hit->log_weights.push_back(std::log(w));
    }
  }
  weights_ = hit->weights;
  log_weights_ = hit->log_weights;

  base_ = log_weights_;
  mu_.resize(axes_.size());
  sigma_.resize(axes_.size());
  inv_sigma_.resize(axes_.size());
  log_hit_.assign(axes_.size(), 0);
  log_miss_.assign(axes_.size(), 0);
  constant_.assign(axes_.size(), false);
  cells_.resize(axes_.size());
  const bool one_axis = axes_.size() == 1;
  std::vector<std::uint32_t> line_order;
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
    // The means in order: for univariate bandwidths, and to lay out a Line or group cells.
    std::vector<std::uint32_t> order;
    if (!options.multivariate || one_axis || axis.discrete) order = stable_order(mu);
    std::vector<double> sigma;
    if (options.multivariate) {
      const double s = kMultivariateBandwidth * std::pow(std::max<double>(static_cast<double>(n), 1.0), -1.0 / (dims + 4.0)) * range;
      sigma.assign(kernels, s);
    } else {
      sigma = neighbour_gaps(mu, order, axis.low, axis.high);
    }
    const double min_sigma = range / std::min(100.0, 1.0 + static_cast<double>(kernels));
    for (auto& s : sigma) s = std::clamp(s, min_sigma, range);
    sigma.back() = range;
    auto& inverse = inv_sigma_[a];
    inverse.reserve(kernels);
    // Bandwidths repeat (the clip, Scott's rule): each distinct run's log is taken once.
    double last_sigma = 0, log_sigma = 0, inverse_sigma = 0;
    for (std::size_t k = 0; k < kernels; ++k) {
      if (sigma[k] != last_sigma) {
        last_sigma = sigma[k];
        log_sigma = std::log(sigma[k]) + kHalfLogTwoPi;
        inverse_sigma = 1.0 / sigma[k];
      }
      const double mass = mass_in_range(mu[k], sigma[k], axis.low, axis.high);
      if (mass != 1.0) base_[k] -= std::log(mass);
      // A discrete axis adds each cell's log mass at evaluation; a continuous one its density.
      if (!axis.discrete) base_[k] -= log_sigma;
      inverse.push_back(inverse_sigma);
    }
    sigma_[a] = std::move(sigma);
    if (one_axis) {
      line_order = std::move(order);
    } else if (axis.discrete) {
      // Groups of equal (mean, bandwidth): equal means are adjacent in `order`, and among them
      // few bandwidths differ (a tie's outermost members take the gaps beyond it).
      auto& cells = cells_[a];
      cells.group.resize(kernels);
      std::size_t run = 0;  // the first group of the current mean
      for (std::size_t j = 0; j < order.size(); ++j) {
        const std::size_t k = order[j];
        if (j == 0 || mu[k] != cells.mu.back()) run = cells.mu.size();
        std::size_t g = run;
        while (g < cells.mu.size() && cells.sigma[g] != sigma_[a][k]) ++g;
        if (g == cells.mu.size()) {
          cells.mu.push_back(mu[k]);
          cells.sigma.push_back(sigma_[a][k]);
        }
        cells.group[k] = static_cast<std::uint32_t>(g);
      }
    }
  }
  if (one_axis && !constant_[0]) {
    if (axes_[0].categorical) {
      // Each choice's probability in closed form: the observed kernels' weights on it times
      // the kernel's probability of its own choice, the others' times that of another, and
      // the prior's spread evenly.
      const std::size_t c = axes_[0].choices;
      std::vector<double> on(c, 0.0);
      for (std::size_t k = 0; k < n; ++k) on[static_cast<std::size_t>(mu_[0][k])] += weights_[k];
      for (std::size_t choice = 0; choice < c; ++choice) {
        double others = 0;
        for (std::size_t o = 0; o < c; ++o) others += o == choice ? 0.0 : on[o];
        const double p = on[choice] * std::exp(log_hit_[0]) + others * std::exp(log_miss_[0]) +
                         weights_[n] / static_cast<double>(c);
        choice_log_density_.push_back(std::log(p));
      }
    } else {
      build_line(line_order);
    }
  }
}

void ParzenEstimator::build_line(const std::vector<std::uint32_t>& order) {
  auto& line = line_;
  has_line_ = true;
  line.discrete = axes_[0].discrete;
  const auto& mu = mu_[0];
  const auto& sigma = sigma_[0];
  const std::size_t prior = mu.size() - 1;
  line.prior_mu = mu[prior];
  line.prior_sigma = sigma[prior];
  line.prior_inv = inv_sigma_[0][prior];
  line.prior_base = base_[prior];
  // Merged kernels: equal mean and bandwidth give equal terms but for the log weight, so one
  // term with the weights summed stands for them (their log-sum-exp, exactly).
  std::vector<double> first_weight, weight;  // the first member's, and the members' sum
  for (auto* v : {&line.mu, &line.sigma, &line.inv_sigma, &line.base, &first_weight, &weight}) v->reserve(order.size());
  for (const auto k : order) {
    if (k == prior) continue;
    const double w = weights_[k];
    if (!line.mu.empty() && line.mu.back() == mu[k] && line.sigma.back() == sigma[k]) {
      weight.back() += w;
      continue;
    }
    line.mu.push_back(mu[k]);
    line.sigma.push_back(sigma[k]);
    line.inv_sigma.push_back(inv_sigma_[0][k]);
    line.base.push_back(base_[k]);
    first_weight.push_back(w);
    weight.push_back(w);
  }
  for (std::size_t m = 0; m < line.base.size(); ++m) {
    if (weight[m] != first_weight[m]) line.base[m] += std::log(weight[m] / first_weight[m]);
  }
  const std::size_t merged = line.mu.size(), blocks = (merged + kBlock - 1) / kBlock;
  for (std::size_t b = 0; b < blocks; ++b) {
    const std::size_t from = b * kBlock, to = std::min(merged, from + kBlock);
    double peak = -INFINITY, inv = INFINITY;
    for (std::size_t m = from; m < to; ++m) {
      peak = std::max(peak, line.base[m] + (line.discrete ? cell_peak(line.sigma[m]) : 0.0));
      inv = std::min(inv, line.inv_sigma[m]);
    }
    line.lo.push_back(line.mu[from]);
    line.hi.push_back(line.mu[to - 1]);
    line.peak.push_back(peak);
    line.inv.push_back(inv);
  }
  line.after_peak = line.peak;
  line.after_inv = line.inv;
  for (std::size_t b = blocks; b-- > 1;) {
    line.after_peak[b - 1] = std::max(line.after_peak[b - 1], line.after_peak[b]);
    line.after_inv[b - 1] = std::min(line.after_inv[b - 1], line.after_inv[b]);
  }
  line.before_peak = line.peak;
  line.before_inv = line.inv;
  for (std::size_t b = 1; b < blocks; ++b) {
    line.before_peak[b] = std::max(line.before_peak[b], line.before_peak[b - 1]);
    line.before_inv[b] = std::min(line.before_inv[b], line.before_inv[b - 1]);
  }
}

std::vector<std::vector<double>> ParzenEstimator::sample(std::mt19937_64& rng, std::size_t count) const {
  const auto& weights = weights_;
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

double ParzenEstimator::log_density(const std::vector<double>& x) const { return log_density_below(x, INFINITY); }

double ParzenEstimator::log_density_below(const std::vector<double>& x, double limit) const {
  if (has_line_) return line_log_density(x[0], limit);
  if (!choice_log_density_.empty()) return choice_log_density_[static_cast<std::size_t>(x[0])];
  return product_log_density(x);
}

double ParzenEstimator::line_log_density(double x, double limit) const {
  // The blocks outward from x, nearest first, each skipped when its bound puts every term in it
  // more than negligible_ below the largest term so far, and the walk stopped when the bound of
  // all blocks beyond does. The largest so far is at most the largest of all, so what is left
  // out is negligible against the full sum too (negligible_below).
  const auto& line = line_;
  const double slack = line.discrete ? 0.5 : 0.0;  // a cell reaches half a unit toward a mean
  const auto term = [&](double mu, double sigma, double inv, double base) {
    if (line.discrete) return base + log_cell_mass(x, mu, sigma);
    const double z = (x - mu) * inv;
    return base - 0.5 * z * z;
  };
  const auto below = [&](double peak, double inv, double distance, double floor) {
    const double z = std::max(0.0, distance - slack) * inv;
    return peak - 0.5 * z * z < floor;
  };
  // The sum runs relative to the largest term so far, rescaled when a larger one comes; a term
  // is left out only when negligible against the largest so far, so against the largest of all.
  double top = term(line.prior_mu, line.prior_sigma, line.prior_inv, line.prior_base), sum = 1.0;
  const auto add_block = [&](std::size_t b) {
    const std::size_t to = std::min(line.mu.size(), (b + 1) * kBlock);
    for (std::size_t m = b * kBlock; m < to; ++m) {
      const double t = term(line.mu[m], line.sigma[m], line.inv_sigma[m], line.base[m]);
      if (t > top) {
        sum = sum * std::exp(top - t) + 1.0;
        top = t;
      } else if (t > top - negligible_) {
        sum += std::exp(t - top);
      }
    }
  };
  // Blocks alternate between the sides, the nearer first, so that the partial sum, which can
  // only grow, reaches `limit` early when the density is above it.
  const std::size_t blocks = line.lo.size();
  std::size_t right = static_cast<std::size_t>(std::lower_bound(line.hi.begin(), line.hi.end(), x) - line.hi.begin());
  std::size_t left = right;  // the next block leftward is left - 1
  bool right_done = right >= blocks, left_done = left == 0;
  while (!right_done || !left_done) {
    const double right_distance = right_done ? INFINITY : std::max(0.0, line.lo[right] - x);
    const double left_distance = left_done ? INFINITY : std::max(0.0, x - line.hi[left - 1]);
    const bool go_right = right_distance <= left_distance;
    const std::size_t b = go_right ? right : left - 1;
    const double distance = go_right ? right_distance : left_distance;
    // What bounds every block from b on, away from x: past it the walk on this side ends.
    const double beyond_peak = go_right ? line.after_peak[b] : line.before_peak[b];
    const double beyond_inv = go_right ? line.after_inv[b] : line.before_inv[b];
    if (go_right) right_done = ++right >= blocks;
    else left_done = --left == 0;
    if (below(beyond_peak, beyond_inv, distance, top - negligible_)) {
      (go_right ? right_done : left_done) = true;
      continue;
    }
    if (below(line.peak[b], line.inv[b], distance, top - negligible_)) continue;
    add_block(b);
    if (top + std::log(sum) >= limit) break;
  }
  return top + std::log(sum);
}

double ParzenEstimator::product_log_density(const std::vector<double>& x) const {
  // log-sum-exp over the kernels: each term built axis by axis over contiguous arrays, then
  // one exp per term that can matter.
  thread_local std::vector<double> terms, cell_terms;
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
    const double xa = x[a];
    if (axes_[a].discrete) {
      const auto& cells = cells_[a];
      cell_terms.resize(cells.mu.size());
      for (std::size_t g = 0; g < cells.mu.size(); ++g) cell_terms[g] = log_cell_mass(xa, cells.mu[g], cells.sigma[g]);
      const std::uint32_t* group = cells.group.data();
      for (std::size_t k = 0; k < n; ++k) terms[k] += cell_terms[group[k]];
      continue;
    }
    const double* inverse = inv_sigma_[a].data();
    for (std::size_t k = 0; k < n; ++k) {
      const double z = (xa - mu[k]) * inverse[k];
      terms[k] -= 0.5 * z * z;
    }
  }
  const double top = *std::max_element(terms.begin(), terms.end());
  return log_sum_exp(terms.data(), n, top, negligible_);
}

}  // namespace packtune::tuners
