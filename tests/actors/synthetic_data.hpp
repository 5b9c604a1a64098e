#pragma once
// A small learnable image set for actor tests: the label is the brightest row band.
#include <cstdint>

#include "datasets/image_dataset.hpp"

namespace packtune::testing {

inline datasets::DataSplit synthetic_split(std::uint32_t train, std::uint32_t validation, int side = 10) {
  auto make = [side](std::uint32_t n, std::uint32_t offset) {
    datasets::ImageDataset d;
    d.count = n;
    d.height = side;
    d.width = side;
    for (std::uint32_t i = 0; i < n; ++i) {
      const std::uint8_t label = static_cast<std::uint8_t>((i * 7 + offset) % 10);
      d.labels.push_back(label);
      for (int r = 0; r < side; ++r) {
        for (int c = 0; c < side; ++c) {
          d.pixels.push_back(static_cast<std::uint8_t>(r == label % side ? 200 + (i + c) % 50
                                                                         : (i * 31 + c * 17 + r) % 90));
        }
      }
    }
    return d;
  };
  return {make(train, 0), make(validation, 3)};
}

}  // namespace packtune::testing
