#include "actors/memory_profile.hpp"

#include "actors/fused_group.hpp"
#include "actors/memory_meter.hpp"
#include "datasets/batch_stream.hpp"
#include "packtune/error.hpp"

namespace packtune::actors {
namespace {

datasets::ImageDataset random_images(std::uint32_t count, const InputShape& input, std::uint32_t salt) {
  datasets::ImageDataset d;
  d.count = count;
  d.channels = static_cast<std::uint32_t>(input.channels);
  d.height = static_cast<std::uint32_t>(input.height);
  d.width = static_cast<std::uint32_t>(input.width);
  d.classes = static_cast<std::uint32_t>(input.classes);
  d.pixels.resize(d.image_size() * count);
  std::uint32_t x = 2463534242u + salt;
  for (auto& p : d.pixels) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    p = static_cast<std::uint8_t>(x);
  }
  for (std::uint32_t i = 0; i < count; ++i) d.labels.push_back(static_cast<std::uint8_t>(i % d.classes));
  return d;
}

}  // namespace

datasets::DataSplit synthetic_split(const InputShape& input, std::uint32_t train, std::uint32_t validation) {
  return {random_images(train, input, 1), random_images(validation, input, 2)};
}

std::int64_t measure_peak_bytes(const TrialSpec& spec, int members, const InputShape& input,
                                torch::Device device, int steps) {
  if (!device.is_cpu()) {
    throw Error("memory profiling measures CPU tensor memory only; on " + device.str() +
                " the planner uses the memory model's formula");
  }
  if (members < 1 || steps < 1) throw Error("memory profiling needs at least one member and one step");
  const auto batch = static_cast<std::uint32_t>(spec.batch_size);
  // One evaluation chunk of validation data, so the evaluation peak is part of the figure.
  const auto validation = static_cast<std::uint32_t>(evaluation_chunk(spec.batch_size));
  const auto split = synthetic_split(input, batch * static_cast<std::uint32_t>(steps), validation);
  datasets::BatchStream stream(split, device, 0);

  PeakScope scope;
  {
    FusedGroup group(spec, input, device);
    for (int k = 0; k < members; ++k) group.add(k, spec, static_cast<std::uint64_t>(k + 1));
    std::vector<tuners::TrialId> all;
    for (int k = 0; k < members; ++k) all.push_back(k);
    for (int s = 0; s < steps; ++s) {
      stream.begin_round();
      group.train_step(stream);
    }
    group.evaluate(stream, all);
  }
  return scope.peak_growth();
}

}  // namespace packtune::actors
