#pragma once
// The calibration step of the memory model: trains a few steps of one trial shape (alone, or
// K members fused) on synthetic data of the experiment's input shape and measures the peak
// tensor memory it needed on top of what the process held before. An actor profiles each
// new shape once and tells the driver, whose planner then trusts the measured figure.
#include <cstdint>

#include <torch/torch.h>

#include "actors/classifier.hpp"
#include "datasets/batch_stream.hpp"
#include "datasets/data_source.hpp"
#include "spec/trial_spec.hpp"

namespace packtune::actors {

// Random images and labels of the experiment's input shape, for profiles that must not
// depend on (or disturb) the data a pack trains on.
datasets::DataSplit synthetic_split(const spec::InputShape& input, std::uint32_t train, std::uint32_t validation);

// Peak bytes of training `members` trials of `spec` (fused when members > 1) for `steps`
// steps and one evaluation pass. CPU only: the figure comes from MemoryMeter. `trains_on`:
// the device the figure stands for; for a GPU the optimizer steps as it does there
// (CpuStep::TensorForm), with its temporaries. `stream`: how the run reads its batches (with
// a per-trial order or augmentation each member holds a batch of its own).
std::int64_t measure_peak_bytes(const spec::TrialSpec& spec, int members, const spec::InputShape& input,
                                torch::Device device, int steps = 2,
                                torch::Device trains_on = torch::Device(torch::kCPU),
                                const datasets::StreamOptions& stream = {});

}  // namespace packtune::actors
