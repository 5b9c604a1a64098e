#pragma once
// A data set in memory, as read from IDX, HDF5 or NumPy files: inputs of one sample shape
// (images [C, H, W] or feature rows [D]) and, per sample, a class label or a vector of
// regression targets. Plain C++ without LibTorch, so that the driver can check a data set
// before any actor starts; BatchStream (batch_stream.hpp) puts it on an actor's device once
// and every trial of the pack reads it there.
#include <cstdint>
#include <string>
#include <vector>

namespace packtune::datasets {

enum class Task { Classification, Regression };
const char* to_string(Task task);

// How the inputs are stored. uint8 inputs are images, scaled to [0, 1] when decoded; float32
// inputs are taken as they are.
enum class ElementType { UInt8, Float32 };

struct Dataset {
  std::uint32_t count = 0;
  // One sample's shape: [C, H, W] for images (a file's [N, H, W] gives C = 1), [D] for rows.
  std::vector<std::uint32_t> sample_shape;
  ElementType x_type = ElementType::UInt8;
  // count x sample_size() elements of x_type, row-major, in native byte order.
  std::vector<std::uint8_t> x;

  Task task = Task::Classification;
  std::vector<std::int64_t> labels;  // classification: count labels in [0, classes)
  std::uint32_t classes = 0;
  std::vector<float> targets;        // regression: count x target_size, row-major
  std::uint32_t target_size = 0;     // regression: 1 for targets of shape [N]

  std::size_t sample_size() const;   // the product of sample_shape
  std::size_t element_bytes() const;  // of x_type
  bool images() const { return sample_shape.size() == 3; }
  // The model's outputs per sample: classes, or target_size.
  std::uint32_t outputs() const { return task == Task::Classification ? classes : target_size; }
  // Samples [begin, end) as a data set of their own (classes and shapes kept).
  Dataset slice(std::uint32_t begin, std::uint32_t end) const;
};

}  // namespace packtune::datasets
