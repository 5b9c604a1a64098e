#include "tuners/samplers/gauss_boxes.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "packtune/error.hpp"

namespace packtune::tuners {

GaussBoxes::GaussBoxes(double low, double high, double bandwidth, std::size_t layers)
    : low_(low), h_(bandwidth), inv_h_(1.0 / bandwidth), inv_scale_(1.0 / (bandwidth * std::sqrt(2.0))),
      layers_(layers) {
  if (!(high > low) || !(bandwidth > 0) || !std::isfinite(high - low) || layers < 1) {
    throw Error("gauss boxes: a range of positive width, a positive bandwidth and a layer at least");
  }
  const auto boxes = static_cast<std::size_t>(std::ceil((high - low) * inv_h_)) + 1;
  coefficients_.assign(boxes * layers_ * kTerms, 0.0);
  count_.assign(boxes * layers_, 0);
  total_.assign(boxes, 0);
}

std::size_t GaussBoxes::box_of(double v) const {
  const double at = std::floor((v - low_) * inv_h_);
  return static_cast<std::size_t>(std::clamp(at, 0.0, static_cast<double>(total_.size() - 1)));
}

void GaussBoxes::put(double mu, double w, std::size_t layer, long count) {
  const std::size_t b = box_of(mu);
  total_[b] += count;
  double* c = coefficients(b, layer);
  // A box's last kernel leaving a layer clears it there, rounding and all.
  if ((count_[b * layers_ + layer] += count) == 0 && count != 0) {
    std::fill(c, c + kTerms, 0.0);
    return;
  }
  const double v = (mu - centre(b)) * inv_scale_;
  static const auto inverse = [] {
    std::array<double, kTerms> out{};
    for (int k = 0; k < kTerms; ++k) out[static_cast<std::size_t>(k)] = 1.0 / static_cast<double>(k + 1);
    return out;
  }();
  double term = w;
  for (int k = 0; k < kTerms; ++k) {
    c[k] += term;
    term *= v * inverse[static_cast<std::size_t>(k)];
  }
}

void GaussBoxes::add_layer(std::size_t into, std::size_t from, double factor) {
  for (std::size_t b = 0; b < total_.size(); ++b) {
    if (count_[b * layers_ + into] == 0) continue;
    double* to = coefficients(b, into);
    const double* by = coefficients(b, from);
    for (int k = 0; k < kTerms; ++k) to[k] += factor * by[k];
  }
}

void GaussBoxes::combine(const double* scales, std::vector<double>& combined) const {
  combined.assign(total_.size() * kTerms, 0.0);
  for (std::size_t b = 0; b < total_.size(); ++b) {
    if (total_[b] == 0) continue;
    double* c = &combined[b * kTerms];
    const double* layer = &coefficients_[b * layers_ * kTerms];
    for (std::size_t l = 0; l < layers_; ++l, layer += kTerms) {
      for (int k = 0; k < kTerms; ++k) c[k] += scales[l] * layer[k];
    }
  }
}

void GaussBoxes::clear() {
  std::fill(coefficients_.begin(), coefficients_.end(), 0.0);
  std::fill(count_.begin(), count_.end(), 0);
  std::fill(total_.begin(), total_.end(), 0);
}

double GaussBoxes::sum(double x) const {
  std::vector<double> scales(layers_, 0.0), combined;
  scales[0] = 1;
  combine(scales.data(), combined);
  return sum(x, combined);
}

double GaussBoxes::sum(double x, const std::vector<double>& combined, double stop_at) const {
  // The boxes nearest first, alternating sides: every box adds a sum of positive terms, so the
  // total only grows, and a caller who only needs to know it reached `stop_at` has it early.
  //
  // Box at + d is u_d = u_0 - d / sqrt(2) away in units of h sqrt(2), so its exp(-u_d^2) is
  // exp(-u_0^2) A^d B^(d^2) with A = exp(sqrt(2) u_0) and B = exp(-1/2): each side's next
  // factor is the last one times A B^(2d+1) (A^-1 leftward), itself the last times B^2. Two
  // exps per sum instead of one per box; ten steps of products add a few units of rounding.
  constexpr double kB = 0.60653065971263342360;         // exp(-1/2)
  constexpr double kBB = 0.36787944117144232160;        // exp(-1)
  const auto at = static_cast<std::ptrdiff_t>(box_of(x));
  const auto last = static_cast<std::ptrdiff_t>(total_.size()) - 1;
  const double u0 = (x - centre(static_cast<std::size_t>(at))) * inv_scale_;
  const double e0 = std::exp(-u0 * u0), a = std::exp(std::sqrt(2.0) * u0);
  double right = e0, left = e0;             // exp(-u^2) of the last box reached on each side
  double right_step = a * kB, left_step = kB / a;  // what takes each to the next box
  const auto box = [&](std::ptrdiff_t b, double gauss) {
    if (b < 0 || b > last || total_[static_cast<std::size_t>(b)] == 0) return 0.0;
    const double* c = &combined[static_cast<std::size_t>(b) * kTerms];
    const double u = (x - centre(static_cast<std::size_t>(b))) * inv_scale_;
    // H_0 = 1, H_1 = 2u, H_(k+1) = 2u H_k - 2k H_(k-1).
    double before = 1, now = 2 * u, p = c[0] + c[1] * now;
    for (int k = 1; k + 1 < kTerms; ++k) {
      const double next = 2 * u * now - 2 * k * before;
      before = now;
      now = next;
      p += c[k + 1] * now;
    }
    return gauss * p;
  };
  double total = box(at, e0);
  for (std::ptrdiff_t d = 1; d <= kReach && !(total >= stop_at); ++d) {
    right *= right_step;
    left *= left_step;
    right_step *= kBB;
    left_step *= kBB;
    total += box(at - d, left);
    total += box(at + d, right);
  }
  return total;
}

}  // namespace packtune::tuners
