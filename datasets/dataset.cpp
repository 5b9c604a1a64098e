#include "datasets/dataset.hpp"

#include <functional>
#include <numeric>

namespace packtune::datasets {

const char* to_string(Task task) { return task == Task::Classification ? "classification" : "regression"; }

std::size_t Dataset::sample_size() const {
  return std::accumulate(sample_shape.begin(), sample_shape.end(), std::size_t{1}, std::multiplies<>());
}

std::size_t Dataset::element_bytes() const { return x_type == ElementType::UInt8 ? 1 : sizeof(float); }

Dataset Dataset::slice(std::uint32_t begin, std::uint32_t end) const {
  Dataset d;
  d.count = end - begin;
  d.sample_shape = sample_shape;
  d.x_type = x_type;
  const std::size_t row = sample_size() * element_bytes();
  d.x.assign(x.begin() + static_cast<std::ptrdiff_t>(begin * row), x.begin() + static_cast<std::ptrdiff_t>(end * row));
  d.task = task;
  d.classes = classes;
  d.target_size = target_size;
  if (!labels.empty()) d.labels.assign(labels.begin() + begin, labels.begin() + end);
  if (!targets.empty()) {
    d.targets.assign(targets.begin() + static_cast<std::ptrdiff_t>(begin * target_size),
                     targets.begin() + static_cast<std::ptrdiff_t>(end * target_size));
  }
  return d;
}

}  // namespace packtune::datasets
