#pragma once
// A small learnable image set for actor tests: the label is the brightest row band.
#include <cstdint>

#include "datasets/data_source.hpp"

namespace packtune::testing {

inline datasets::DataSplit synthetic_split(std::uint32_t train, std::uint32_t validation, int side = 10) {
  auto make = [side](std::uint32_t n, std::uint32_t offset) {
    datasets::Dataset d;
    d.count = n;
    d.sample_shape = {1, static_cast<std::uint32_t>(side), static_cast<std::uint32_t>(side)};
    d.classes = 10;
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::int64_t label = (i * 7 + offset) % 10;
      d.labels.push_back(label);
      for (int r = 0; r < side; ++r) {
        for (int c = 0; c < side; ++c) {
          d.x.push_back(static_cast<std::uint8_t>(r == label % side ? 200 + (i + c) % 50
                                                                         : (i * 31 + c * 17 + r) % 90));
        }
      }
    }
    return d;
  };
  return {make(train, 0), make(validation, 3)};
}

}  // namespace packtune::testing
