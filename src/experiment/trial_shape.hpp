#pragma once
// A trial as the planner sees it: its memory shape and fusion key, from its hyper-parameters
// alone (no LibTorch), for the driver and `packtune plan`.
#include "experiment/experiment_config.hpp"
#include "packing/memory_model.hpp"
#include "spec/input_shape.hpp"
#include "spec/trial_spec.hpp"

namespace packtune {

// The config's data as a model sees it, from the data files' headers (and labels), and
// whether its members read batches of their own.
spec::InputShape input_dims(const ExperimentConfig& config);

// `padded`: the fusion key lets trials of other widths share a unit, padded to the widest
// (`"fuse": "always"`); otherwise only trials of the same widths do, so that packing never
// changes a trial's numbers (fuse_pads_widths).
packing::TrialShape trial_shape(const spec::TrialSpec& spec, const spec::InputShape& input = {}, bool padded = false);
// Whether the config's fuse mode lets trials of unlike widths share a fused unit.
bool fuse_pads_widths(const ExperimentConfig& config);

// The training steps of a job to `budget`: the planner's measure of work. `train_images`:
// training_images(config), read once.
double job_steps(const ExperimentConfig& config, std::int64_t train_images, double budget, int batch_size);
// The images an epoch has: datasets::train_examples from the data files; 0 when the
// budget is in steps (nothing to read).
std::int64_t training_images(const ExperimentConfig& config);

// The memory this machine can give without swapping (MemAvailable), 0 if unknown: what the
// CPU actors on it share.
std::int64_t available_memory_bytes();

}  // namespace packtune
