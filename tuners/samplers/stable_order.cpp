#include "tuners/samplers/stable_order.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <numeric>

namespace packtune::tuners {

// The permutation that sorts `v` ascending, equal values in index order (as numpy's stable
// argsort has it). A suggestion orders a thousand or so means per parameter, so this is a
// bucket sort: the values spread over n buckets by where they fall in [min, max] (a monotone
// map, so buckets are in order), then each bucket sorted by insertion, or stable_sort when a
// cluster crowds one. Means spread over their range make it linear.
std::vector<std::uint32_t> stable_order(const std::vector<double>& v) {
  const std::size_t n = v.size();
  std::vector<std::uint32_t> order(n);
  const auto by_value = [&](std::uint32_t a, std::uint32_t b) { return v[a] < v[b]; };
  if (n < 2) {
    std::iota(order.begin(), order.end(), 0u);
    return order;
  }
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  const double scale = static_cast<double>(n) / (*hi - *lo);
  if (!(*hi > *lo) || !std::isfinite(scale)) {
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), by_value);
    return order;
  }
  thread_local std::vector<std::uint32_t> bucket, starts;
  bucket.resize(n);
  starts.assign(n + 1, 0);
  for (std::size_t i = 0; i < n; ++i) {
    bucket[i] = static_cast<std::uint32_t>(std::min<double>(static_cast<double>(n - 1), (v[i] - *lo) * scale));
    ++starts[bucket[i] + 1];
  }
  for (std::size_t b = 0; b < n; ++b) starts[b + 1] += starts[b];
  for (std::size_t i = 0; i < n; ++i) order[starts[bucket[i]]++] = static_cast<std::uint32_t>(i);
  // starts[b] now ends bucket b; bucket b - 1's end begins it.
  for (std::size_t b = 0, from = 0; b < n; from = starts[b++]) {
    const std::size_t to = starts[b];
    if (to - from > 32) {
      std::stable_sort(order.begin() + static_cast<std::ptrdiff_t>(from), order.begin() + static_cast<std::ptrdiff_t>(to), by_value);
      continue;
    }
    for (std::size_t i = from + 1; i < to; ++i) {
      const std::uint32_t moving = order[i];
      std::size_t j = i;
      for (; j > from && v[order[j - 1]] > v[moving]; --j) order[j] = order[j - 1];
      order[j] = moving;
    }
  }
  return order;
}

}  // namespace packtune::tuners
