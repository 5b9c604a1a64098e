#pragma once
// The Parzen estimator of TPE (Bergstra et al., NeurIPS 2011), as Optuna builds it: a
// weighted mixture of one kernel per observation plus a prior kernel over the whole range.
// A numeric parameter gets a truncated normal kernel in its search coordinate (the log of a
// loguniform one; a randint spans [low - 0.5, high + 0.5] and is scored by each integer's
// cell); a choice gets a categorical kernel: prior_weight / (n + 1) on every choice plus 1 on
// the observed one, normalised, so kernels sharpen as results accumulate.
//
// Univariate: one estimator per parameter. Multivariate: one over all parameters, whose
// kernels are products over the parameters, so a component is drawn once for all of them.
//
// Bandwidths follow Optuna's defaults: univariate, the larger gap to a neighbouring
// observation (the prior's mean among them, the range's ends beyond the outermost two);
// multivariate, 0.2 * n^(-1/(d+4)) of the range (Scott's rule); both clipped to
// [range / min(100, 1 + kernels), range] (the "magic clip"). Observation weights ramp up
// with recency past 25 observations: the newest 25 weigh 1, older ones 1/n ... 1.
//
// A suggestion scores dozens of candidates against a thousand or so kernels, so densities are
// not a plain sum over every kernel, though they equal it to double precision: a
// one-parameter estimator keeps its kernels sorted by mean and skips those whose terms are
// provably below 2^-54 / kernels of the largest (together they cannot move the sum's last
// bit), a one-choice estimator has each choice's density worked out once, and a joint one
// computes an integer's cell masses once per distinct (mean, bandwidth).
#include <cstdint>
#include <random>
#include <vector>

#include "tuners/samplers/parzen_axis.hpp"
#include "tuners/search_space.hpp"

namespace packtune::tuners {

struct ParzenOptions {
  double prior_weight = 1.0;
  bool multivariate = false;
};

class ParzenEstimator {
 public:
  // `columns[a]` holds every observation's value on axis a (categorical: the choice's
  // index), oldest first, as the recency weights need; every column is as long.
  ParzenEstimator(const std::vector<ParzenAxis>& axes, const std::vector<std::vector<double>>& columns,
                  const ParzenOptions& options);

  // `count` points drawn from the mixture.
  std::vector<std::vector<double>> sample(std::mt19937_64& rng, std::size_t count) const;
  // The mixture's log density at `x` (categorical axes: the log probability of the choice).
  double log_density(const std::vector<double>& x) const;
  // The same when it is below `limit`; otherwise some value at least `limit`, found as soon as
  // part of the sum (which only grows) reaches it. TPE scores a candidate by l(x) / g(x), and
  // one whose g already makes it lose needs no more of g.
  double log_density_below(const std::vector<double>& x, double limit) const;

  std::size_t kernels() const { return log_weights_.size(); }
  // The kernels' means and bandwidths on numeric axis `axis`, the prior's last; tests compare
  // them with a reference.
  const std::vector<double>& means(std::size_t axis) const { return mu_[axis]; }
  const std::vector<double>& bandwidths(std::size_t axis) const { return sigma_[axis]; }
  const std::vector<double>& log_weights() const { return log_weights_; }

 private:
  // One numeric axis (the univariate case): the kernels sorted by mean, those with equal mean
  // and bandwidth merged (their weights summed), in blocks whose bounds let log_density skip
  // every kernel too far from x to count. The prior is kept apart: its bandwidth is the range.
  struct Line {
    bool discrete = false;
    std::vector<double> mu, sigma, inv_sigma, base;  // per merged kernel, by mean
    // Per block: the means' span, and what bounds a term from above: term <= peak -
    // 0.5 * (distance * inv)^2, distance from x to the span (less half a cell if discrete).
    std::vector<double> lo, hi, peak, inv;
    // Over the blocks from j on (after) or up to j (before): the same bound, for stopping.
    std::vector<double> after_peak, after_inv, before_peak, before_inv;
    double prior_mu = 0, prior_sigma = 1, prior_inv = 1, prior_base = 0;
  };
  // A discrete axis's kernels grouped by (mean, bandwidth), so that an integer's cell masses
  // (two erfc each) are computed once per group rather than once per kernel.
  struct Cells {
    std::vector<std::uint32_t> group;  // per kernel
    std::vector<double> mu, sigma;     // per group
  };

  void build_line(const std::vector<std::uint32_t>& order);
  double line_log_density(double x, double limit) const;
  double product_log_density(const std::vector<double>& x) const;

  std::vector<ParzenAxis> axes_;
  std::vector<double> weights_, log_weights_;  // per kernel, normalised
  std::vector<std::vector<double>> mu_;        // axis -> kernel: numeric mean or choice index
  std::vector<std::vector<double>> sigma_;     // axis -> kernel: numeric only
  std::vector<std::vector<double>> inv_sigma_;  // axis -> kernel: 1 / sigma, numeric only
  // Per kernel: its log weight less, for each numeric axis, the log of sigma * sqrt(2 pi) *
  // its mass inside the range: all of its log density but the quadratic terms.
  std::vector<double> base_;
  std::vector<double> log_hit_, log_miss_;     // axis -> categorical kernel probabilities (observed, other)
  std::vector<bool> constant_;                 // axis -> a numeric range of width 0: no information
  std::vector<Cells> cells_;                   // axis -> discrete axes only
  double prior_weight_;
  double negligible_;  // how far below the largest term a term cannot change the sum
  bool has_line_ = false;
  Line line_;
  std::vector<double> choice_log_density_;  // one categorical axis: the density of each choice
};

// The mass of N(mu, sigma) inside [low, high]: what a kernel truncated to the range is divided by.
double mass_in_range(double mu, double sigma, double low, double high);

// Optuna's recency weights: the newest this many observations weigh 1, older ones ramp up
// from 1/n (recency_weights; SlidingParzen keeps the same split).
inline constexpr std::size_t kRecencyFlat = 25;

// Optuna's default weights of `n` observations, oldest first, not normalised.
std::vector<double> recency_weights(std::size_t n);

}  // namespace packtune::tuners
