#include "actors/memory_profile.hpp"

#include "actors/fused_group.hpp"
#include "actors/memory_meter.hpp"
#include "datasets/batch_stream.hpp"
#include "packtune/error.hpp"

namespace packtune::actors {
namespace {

// Data of the input's kind (uint8 images or float rows; labels or regression targets) from a
// xorshift: what the profiles train on never touches the pack's stream.
datasets::Dataset random_data(std::uint32_t count, const spec::InputShape& input, std::uint32_t salt) {
  datasets::Dataset d;
  d.count = count;
  if (input.images) {
    d.sample_shape = {static_cast<std::uint32_t>(input.channels), static_cast<std::uint32_t>(input.height),
                      static_cast<std::uint32_t>(input.width)};
  } else {
    d.sample_shape = {static_cast<std::uint32_t>(input.width)};
    d.x_type = datasets::ElementType::Float32;
  }
  std::uint32_t x = 2463534242u + salt;
  auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return x;
  };
  d.x.resize(d.sample_size() * d.element_bytes() * count);
  if (input.images) {
    for (auto& p : d.x) p = static_cast<std::uint8_t>(next());
  } else {
    auto* values = reinterpret_cast<float*>(d.x.data());
    for (std::size_t i = 0; i < d.sample_size() * count; ++i) values[i] = static_cast<float>(next() % 2001) / 1000.0f - 1;
  }
  d.task = input.task;
  const auto outputs = static_cast<std::uint32_t>(input.outputs);
  if (input.task == datasets::Task::Classification) {
    d.classes = outputs;
    for (std::uint32_t i = 0; i < count; ++i) d.labels.push_back(i % outputs);
  } else {
    d.target_size = outputs;
    for (std::uint32_t i = 0; i < count * outputs; ++i) d.targets.push_back(static_cast<float>(next() % 2001) / 1000.0f - 1);
  }
  return d;
}

}  // namespace

datasets::DataSplit synthetic_split(const spec::InputShape& input, std::uint32_t train, std::uint32_t validation) {
  return {random_data(train, input, 1), random_data(validation, input, 2)};
}

std::int64_t measure_peak_bytes(const spec::TrialSpec& spec, int members, const spec::InputShape& input,
                                torch::Device device, int steps, torch::Device trains_on,
                                const datasets::StreamOptions& stream) {
  if (!device.is_cpu()) {
    throw Error("memory profiling measures CPU tensor memory only; on " + device.str() +
                " the planner uses the memory model's formula");
  }
  if (members < 1 || steps < 1) throw Error("memory profiling needs at least one member and one step");
  const auto batch = static_cast<std::uint32_t>(spec.batch_size);
  // One evaluation chunk of validation data, so the evaluation peak is part of the figure.
  const auto validation = static_cast<std::uint32_t>(spec::evaluation_chunk(spec.batch_size));
  const auto split = synthetic_split(input, batch * static_cast<std::uint32_t>(steps), validation);
  datasets::BatchStream batches(split, device, 0, stream);

  PeakScope scope;
  {
    FusedGroup group(spec, input, device, trains_on.is_cpu() ? CpuStep::OnePass : CpuStep::TensorForm);
    for (int k = 0; k < members; ++k) group.add(k, spec, static_cast<std::uint64_t>(k + 1));
    std::vector<tuners::TrialId> all;
    for (int k = 0; k < members; ++k) all.push_back(k);
    for (int s = 0; s < steps; ++s) {
      batches.begin_round();
      group.train_step(batches);
    }
    group.evaluate(batches, all);
  }
  return scope.peak_growth();
}

}  // namespace packtune::actors
