#include "tuners/samplers/sliding_parzen.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "packtune/error.hpp"

namespace packtune::tuners {
namespace {

constexpr std::int64_t kPriorId = std::numeric_limits<std::int64_t>::max();  // after every kernel, as its index is
constexpr double kRootTwoPi = 2.506628274631000502416;

double kernel_scale(double mu, double sigma, const ParzenAxis& axis) {
  return 1.0 / (mass_in_range(mu, sigma, axis.low, axis.high) * sigma * kRootTwoPi);
}

std::size_t ramp_of(std::size_t n) { return n > kRecencyFlat ? n - kRecencyFlat : 0; }

}  // namespace

bool SlidingParzen::handles(const ParzenAxis& axis) {
  return axis.categorical ? axis.choices > 0 : !axis.discrete && axis.high - axis.low > 0;
}

SlidingParzen::SlidingParzen(const ParzenAxis& axis, const std::vector<std::pair<std::int64_t, double>>& kernels,
                             double prior_weight)
    : SlidingParzen(axis, prior_weight) {
  for (const auto& [id, value] : kernels) insert(id, value);
  rebuild();  // the inserts moved kernels between layers: start from sums made in one pass
}

SlidingParzen::SlidingParzen(const ParzenAxis& axis, double prior_weight) : axis_(axis), prior_weight_(prior_weight) {
  if (!handles(axis) || !(prior_weight > 0)) throw Error("sliding parzen: a choice or a continuous range, a positive prior");
  if (axis.categorical) {
    ramp_.assign(axis.choices, 0.0);
    ramp_position_.assign(axis.choices, 0.0);
    flat_.assign(axis.choices, 0.0);
    return;
  }
  range_ = axis.high - axis.low;
  h_ = range_ / 100.0;  // ParzenEstimator's clip, range / min(100, 2 + observations), from 98 on
  const double prior_mu = 0.5 * (axis.low + axis.high);
  prior_scale_ = kernel_scale(prior_mu, range_, axis_);
  sorted_.emplace(prior_mu, kPriorId);
  boxes_.emplace(axis.low, axis.high, h_, 3);
}

std::size_t SlidingParzen::ramp_size() const { return ramp_of(ids_.size()); }

std::size_t SlidingParzen::position(std::int64_t id) const {
  return static_cast<std::size_t>(std::lower_bound(ids_.begin(), ids_.end(), id) - ids_.begin());
}

void SlidingParzen::place(std::size_t at, bool ramp, int sign) {
  const Kernel& k = kernels_[at];
  const double p = static_cast<double>(at), by = sign;
  if (!numeric()) {
    const auto c = static_cast<std::size_t>(k.value);
    if (ramp) {
      ramp_[c] += by;
      ramp_position_[c] += by * p;
    } else {
      flat_[c] += by;
    }
    return;
  }
  if (k.sigma != h_) {
    if (sign > 0) wide_.insert(ids_[at]);
    else wide_.erase(ids_[at]);
    return;
  }
  const auto put = [&](double w, Layer layer) {
    if (sign > 0) boxes_->add(k.value, w, layer);
    else boxes_->remove(k.value, w, layer);
  };
  if (ramp) {
    put(k.scale, kRampLayer);
    put(k.scale * p, kPositionLayer);
  } else {
    put(k.scale, kFlatLayer);
  }
}

void SlidingParzen::shift(std::size_t from, double by) {
  // S1 moves by `by` times the ramp's kernels from `from` on: from the nearer end, either those
  // one by one, or all of S0 less those before `from`.
  const std::size_t r = ramp_size();
  if (from >= r) return;
  std::size_t begin = from, end = r;
  if (from < r - from) {
    if (numeric()) {
      boxes_->add_layer(kPositionLayer, kRampLayer, by);
    } else {
      for (std::size_t c = 0; c < ramp_.size(); ++c) ramp_position_[c] += by * ramp_[c];
    }
    begin = 0, end = from, by = -by;
  }
  for (std::size_t q = begin; q < end; ++q) {
    const Kernel& k = kernels_[q];
    if (!numeric()) {
      ramp_position_[static_cast<std::size_t>(k.value)] += by;
    } else if (k.sigma == h_) {
      boxes_->reweigh(k.value, k.scale * by, kPositionLayer);
    }  // a wide kernel's weight is worked out from its position when summed
  }
}

double SlidingParzen::bandwidth_at(Sorted::const_iterator at) const {
  // neighbour_gaps's rule: the larger gap to a neighbour (the range's ends beyond the
  // outermost), but the outermost means take their inner gap; then the clip. The prior's mean
  // is among the neighbours, so there are always two means at least.
  const double mu = at->first;
  const auto next = std::next(at);
  double gap;
  if (at == sorted_.begin()) {
    gap = next->first - mu;
  } else if (next == sorted_.end()) {
    gap = mu - std::prev(at)->first;
  } else {
    gap = std::max(mu - std::prev(at)->first, next->first - mu);
  }
  return std::clamp(gap, h_, range_);
}

void SlidingParzen::rebandwidth(Sorted::const_iterator at) {
  if (at == sorted_.end() || at->second == kPriorId) return;
  const std::size_t p = position(at->second);
  Kernel& k = kernels_[p];
  const double sigma = bandwidth_at(at);
  if (sigma == k.sigma) return;
  const bool ramp = p < ramp_size();
  place(p, ramp, -1);
  k.sigma = sigma;
  k.scale = kernel_scale(k.value, sigma, axis_);
  place(p, ramp, +1);
}

void SlidingParzen::insert(std::int64_t id, double value) {
  if (!numeric() && !(value >= 0 && value < static_cast<double>(axis_.choices))) {
    throw Error("sliding parzen: choice " + std::to_string(value) + " out of range");
  }
  const std::size_t n = ids_.size(), r = ramp_of(n), p = position(id);
  if ((p < n && ids_[p] == id) || id == kPriorId) throw Error("sliding parzen: kernel " + std::to_string(id) + " is already in");
  // Those after it move up a position; with the set one larger the ramp gains a place, which
  // the oldest flat kernel takes unless the new one falls in the ramp.
  if (p < r) shift(p, +1);
  if (n >= kRecencyFlat && p > r) {
    place(r, false, -1);
    place(r, true, +1);
  }
  ids_.insert(ids_.begin() + static_cast<std::ptrdiff_t>(p), id);
  kernels_.insert(kernels_.begin() + static_cast<std::ptrdiff_t>(p), Kernel{value});
  if (numeric()) {
    Kernel& k = kernels_[p];
    const auto at = sorted_.emplace(value, id).first;
    k.sigma = bandwidth_at(at);
    k.scale = kernel_scale(value, k.sigma, axis_);
    place(p, p < ramp_size(), +1);
    if (at != sorted_.begin()) rebandwidth(std::prev(at));
    rebandwidth(std::next(at));
  } else {
    place(p, p < ramp_size(), +1);
  }
  count_change();
}

void SlidingParzen::erase(std::int64_t id) {
  const std::size_t n = ids_.size(), r = ramp_of(n), p = position(id);
  if (p == n || ids_[p] != id) throw Error("sliding parzen: no kernel " + std::to_string(id));
  const Kernel k = kernels_[p];
  // Those after it move down a position (counted while S0 still holds it: the oldest leaving
  // is S1 less S0, plus itself); with the set one smaller the ramp loses its last place to the
  // flat kernels, unless the one leaving was in the ramp.
  if (p < r) shift(p + 1, -1);
  place(p, p < r, -1);
  if (p >= r && r > 0) {
    place(r - 1, true, -1);
    place(r - 1, false, +1);
  }
  ids_.erase(ids_.begin() + static_cast<std::ptrdiff_t>(p));
  kernels_.erase(kernels_.begin() + static_cast<std::ptrdiff_t>(p));
  if (numeric()) {
    const auto next = sorted_.erase(sorted_.find({k.value, id}));
    if (next != sorted_.begin()) rebandwidth(std::prev(next));
    rebandwidth(next);
  }
  count_change();
}

void SlidingParzen::count_change() {
  combined_stale_ = true;
  if (++changes_ > std::max<std::size_t>(ids_.size(), 1024)) rebuild();
}

void SlidingParzen::rebuild() {
  changes_ = 0;
  if (numeric()) {
    boxes_->clear();
    wide_.clear();
  } else {
    std::fill(ramp_.begin(), ramp_.end(), 0.0);
    std::fill(ramp_position_.begin(), ramp_position_.end(), 0.0);
    std::fill(flat_.begin(), flat_.end(), 0.0);
  }
  const std::size_t r = ramp_size();
  for (std::size_t p = 0; p < ids_.size(); ++p) place(p, p < r, +1);
}

double SlidingParzen::log_density_below(double x, double limit) const {
  const std::size_t n = ids_.size();
  // recency_weights: the newest 25 weigh 1, the r before them 1/n ... 1 evenly.
  const std::size_t r = ramp_of(n), flat = n - r;
  const double a = n > 0 ? 1.0 / static_cast<double>(n) : 0.0;
  const double b = r >= 2 ? (1.0 - a) / static_cast<double>(r - 1) : 0.0;
  const double rd = static_cast<double>(r);
  const double total = rd * a + b * rd * (rd - 1) / 2 + static_cast<double>(flat) + prior_weight_;
  if (!numeric()) {
    const auto c = static_cast<std::size_t>(x);
    const double choices = static_cast<double>(axis_.choices);
    const double spread = prior_weight_ / static_cast<double>(n + 1);
    const double hit = (1.0 + spread) / (1.0 + choices * spread), miss = spread / (1.0 + choices * spread);
    const double on = a * ramp_[c] + b * ramp_position_[c] + flat_[c];
    const double kernels_weight = total - prior_weight_;
    return std::log((on * hit + (kernels_weight - on) * miss + prior_weight_ / choices) / total);
  }
  if (n < kMinKernels) throw Error("sliding parzen: fewer than 99 kernels, where the clip is wider than range / 100");
  if (combined_stale_) {
    // What every density until the next change shares: the boxes' layers weighted, and each
    // wide kernel's weight times its scale.
    const double scales[3] = {a, b, 1.0};
    boxes_->combine(scales, combined_);
    wide_terms_.clear();
    for (const auto id : wide_) {
      const std::size_t p = position(id);
      const Kernel& k = kernels_[p];
      const double w = p < r ? a + b * static_cast<double>(p) : 1.0;
      wide_terms_.push_back({k.value, 1.0 / k.sigma, w * k.scale});
    }
    combined_stale_ = false;
  }
  // The prior and the wide kernels first, then the boxes up to what reaches `limit`.
  const double z = (x - 0.5 * (axis_.low + axis_.high)) / range_;
  double exact = prior_weight_ * prior_scale_ * std::exp(-0.5 * z * z);
  for (const auto& t : wide_terms_) {
    const double zk = (x - t.mu) * t.inv_sigma;
    exact += t.coefficient * std::exp(-0.5 * zk * zk);
  }
  const double stop_at = limit == INFINITY ? INFINITY : std::exp(limit) * total - exact;
  const double boxed = boxes_->sum(x, combined_, stop_at);
  const double density = std::log((boxed + exact) / total);
  // Stopped: at least `limit`, as promised, whatever the last bit of the log says.
  return boxed >= stop_at ? std::max(density, limit) : density;
}

}  // namespace packtune::tuners
