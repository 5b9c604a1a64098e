#pragma once
// TPE's bad-set estimator g of one parameter, kept up to date as the bad set changes instead
// of rebuilt for every suggestion: a running trial joins as the newest kernel, the cap drops
// the oldest result, and now and then the good set takes a member or gives one back. Its
// density is ParzenEstimator's for the same kernels to rounding, not bit for bit: the tests
// (tests/tuners/sliding_parzen_test.cpp) hold the log densities within 1e-13.
//
// What makes that possible (for 100 kernels or more, where the magic clip is range / 100):
//  - The recency weights of n kernels, oldest first, are 1 for the newest 25 and a + b * i for
//    the rest (i = 0 the oldest; a and b depend on n alone). So the weighted sum is a * S0 +
//    b * S1 + F, with S0 the ramp's kernels, S1 each times its position i, and F the newest 25.
//    The oldest kernel leaving shifts every position by one: S1 less S0. One leaving or
//    joining elsewhere shifts those after it, each in 24 multiply-adds.
//  - Nearly every kernel of a numeric axis has the clip's bandwidth h, as its neighbours lie
//    within h: those sums are GaussBoxes, three layers (S0, S1, F) over one geometry, each
//    kernel weighted by 1 / (its mass inside the range * h * sqrt(2 pi)). The few kernels in a
//    gap wider than h, and the prior, are summed exactly. A kernel's bandwidth follows its
//    neighbours (the means are kept sorted), and moves it between the two.
//  - A choice axis keeps S0, S1 and F per choice as counts, exactly.
// Integer axes (a kernel's density at x is its mass on x's cell) are not handled here.
//
// The boxes' rounding grows with each change, so the sums are rebuilt from the kernels after
// as many changes as there are kernels (1,024 at least): deterministic, like everything here.
// The densities' caches are mutable: one thread at a time, as the sampler runs.
#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "tuners/samplers/gauss_boxes.hpp"
#include "tuners/samplers/parzen_estimator.hpp"

namespace packtune::tuners {

class SlidingParzen {
 public:
  // The fewest kernels it models a numeric axis with (98 would do: the clip is range / 100 from
  // 98 observations and the prior on).
  static constexpr std::size_t kMinKernels = 99;

  // Whether an axis can be modelled: a choice, or a continuous range of positive width.
  static bool handles(const ParzenAxis& axis);

  SlidingParzen(const ParzenAxis& axis, double prior_weight = 1.0);
  // With these kernels (id, value) in.
  SlidingParzen(const ParzenAxis& axis, const std::vector<std::pair<std::int64_t, double>>& kernels,
                double prior_weight);

  // A kernel at `value` (the axis coordinate, or a choice's index). Kernels are ordered by
  // `id`, oldest (lowest) first, as the recency weights need; ids are unique.
  void insert(std::int64_t id, double value);
  void erase(std::int64_t id);
  std::size_t size() const { return ids_.size(); }
  // The kernels' ids, oldest first.
  const std::vector<std::int64_t>& ids() const { return ids_; }

  // log g(x), as ParzenEstimator({axis}, {the kernels' values, oldest first}).log_density({x}).
  // Throws for a numeric axis below kMinKernels kernels.
  double log_density(double x) const { return log_density_below(x, INFINITY); }
  // The same when it is below `limit`; otherwise some value at least `limit`
  // (ParzenEstimator::log_density_below).
  double log_density_below(double x, double limit) const;

 private:
  struct Kernel {
    double value;
    double sigma = 0;  // numeric: the bandwidth; == h_: in the boxes, else summed exactly
    double scale = 0;  // numeric: 1 / (mass inside the range * sigma * sqrt(2 pi))
  };
  using Sorted = std::set<std::pair<double, std::int64_t>>;  // (mean, id): the prior's id after all
  enum Layer : std::size_t { kRampLayer = 0, kPositionLayer = 1, kFlatLayer = 2 };

  bool numeric() const { return !axis_.categorical; }
  std::size_t ramp_size() const;  // of the kernels now
  std::size_t position(std::int64_t id) const;
  // The kernel at position `at` takes its part in the sums (+1) or gives it up (-1), in the
  // ramp or not.
  void place(std::size_t at, bool ramp, int sign);
  // The ramp kernels from position `from` on move one position up (+1) or down (-1).
  void shift(std::size_t from, double by);
  // A numeric kernel's bandwidth from its neighbours in mean order, and its part moved if it
  // changed.
  void rebandwidth(Sorted::const_iterator at);
  double bandwidth_at(Sorted::const_iterator at) const;
  void count_change();
  void rebuild();

  ParzenAxis axis_;
  double prior_weight_;
  double range_ = 0, h_ = 0, prior_scale_ = 0;
  std::vector<std::int64_t> ids_;  // ascending: a kernel's position is its index
  std::vector<Kernel> kernels_;    // by position
  Sorted sorted_;  // numeric only, with the prior's mean, for the neighbour gaps
  std::optional<GaussBoxes> boxes_;
  std::set<std::int64_t> wide_;  // numeric: kernels summed exactly
  // Choice: per choice, S0, S1 and F's weights.
  std::vector<double> ramp_, ramp_position_, flat_;
  std::size_t changes_ = 0;
  // The boxes' layers combined with the present weights, and the wide kernels' terms, for the
  // candidates of a suggestion: made at the first density after a change.
  struct WideTerm {
    double mu, inv_sigma, coefficient;
  };
  mutable std::vector<double> combined_;
  mutable std::vector<WideTerm> wide_terms_;
  mutable bool combined_stale_ = true;
};

}  // namespace packtune::tuners
