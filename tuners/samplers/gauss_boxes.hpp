#pragma once
// Sums of Gaussian kernels that share one bandwidth, kept as Hermite coefficients per box of
// the line (the fast Gauss transform, Greengard and Strain, SIAM J. Sci. Stat. Comput. 1991).
//
// Why: past 100 observations the magic clip gives nearly every kernel of TPE's bad-set
// estimator the same bandwidth, range / 100, so that estimator is such a sum. A direct density
// sums the few hundred kernels near x, an exp each; here it is about twenty boxes' polynomials
// and one exp per box. And the coefficients are sums over the kernels, so a kernel joins or
// leaves in kTerms multiply-adds: the estimator can follow the bad set as trials start and
// report instead of being rebuilt for every suggestion (SlidingParzen).
//
// A box is one bandwidth wide. In units of h * sqrt(2), a kernel at offset v from its box's
// centre c (|v| <= 0.36) adds w v^k / k! to the box's k-th coefficient, and at x, u = (x - c) /
// (h sqrt(2)) away, the box's kernels sum to exp(-u^2) sum_k coefficient_k H_k(u), H_k the
// Hermite polynomials: the generating function exp(2uv - v^2) = sum_k H_k(u) v^k / k! makes that
// exp(-(u - v)^2) = exp(-(x - mu)^2 / 2h^2), summed, truncated after kTerms terms. By Cramer's
// inequality the terms left out are below 1.1 (2^(1/2) |v|)^k / sqrt(k!) exp(-u^2 / 2) of a
// kernel's weight: with 24 terms under 1e-19 of it wherever x is. Boxes more than kReach boxes
// from x are left out: their kernels are at least kReach bandwidths away, where a term is
// below exp(-50) of its weight. So the sum is the direct sum's to within about 1e-15 of the
// weights of the kernels near x (and 1e-15 relative where a kernel lies close to x); callers
// add a prior kernel spanning the range, which dominates where no kernel is near.
//
// Several sums over one geometry ("layers", each with its own kernels and weights) are
// evaluated together as a weighted sum of them, for the price of one: the Hermite polynomials
// are shared. A kernel is removed by subtracting its terms; the rounding that leaves grows
// with the number of changes, so a long-lived sum is rebuilt now and then, and a box whose
// last kernel leaves a layer is cleared there exactly.
#include <cmath>
#include <cstddef>
#include <vector>

namespace packtune::tuners {

class GaussBoxes {
 public:
  static constexpr int kTerms = 24;
  static constexpr int kReach = 10;

  // `layers` sums of kernels of bandwidth `bandwidth` whose means lie in [low, high].
  GaussBoxes(double low, double high, double bandwidth, std::size_t layers = 1);

  // Adds w * exp(-(x - mu)^2 / (2 h^2)) to layer `layer`; remove takes one that was added away.
  void add(double mu, double w, std::size_t layer = 0) { put(mu, w, layer, 1); }
  void remove(double mu, double w, std::size_t layer = 0) { put(mu, -w, layer, -1); }
  // Changes the weight of a kernel in `layer` by `w` (the kernel stays).
  void reweigh(double mu, double w, std::size_t layer = 0) { put(mu, w, layer, 0); }
  // Layer `into` plus `factor` times layer `from`, coefficient by coefficient, for two layers
  // that hold the same kernels: every kernel's weight in `into` moved by factor times its
  // weight in `from`.
  void add_layer(std::size_t into, std::size_t from, double factor);
  // Layer 0's sum at x (one query: the tests' direct check).
  double sum(double x) const;
  // Many queries of one weighted sum over the layers, scales[layer] times each: the layers
  // combined once into `combined` (combine), then summed at each x. With `stop_at`, the sum
  // may stop once it reaches that: then some value at least that.
  void combine(const double* scales, std::vector<double>& combined) const;
  double sum(double x, const std::vector<double>& combined, double stop_at = INFINITY) const;
  // Every layer emptied.
  void clear();

  double bandwidth() const { return h_; }
  std::size_t boxes() const { return total_.size(); }

 private:
  void put(double mu, double w, std::size_t layer, long count);
  std::size_t box_of(double v) const;
  double centre(std::size_t box) const { return low_ + (static_cast<double>(box) + 0.5) * h_; }
  double* coefficients(std::size_t box, std::size_t layer) { return &coefficients_[(box * layers_ + layer) * kTerms]; }

  double low_, h_, inv_h_, inv_scale_;  // inv_scale_: 1 / (h sqrt(2))
  std::size_t layers_;
  std::vector<double> coefficients_;  // box-major, then layer, kTerms each
  std::vector<long> count_;           // kernels per (box, layer): added less removed
  std::vector<long> total_;           // kernels per box over the layers
};

}  // namespace packtune::tuners
