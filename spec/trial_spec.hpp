#pragma once
// What an actor needs to train one trial, parsed from the trial's hyper-parameters (the
// config's fixed "model" values overlaid with the tuner's sample). Plain C++, no LibTorch, so
// the driver can validate a config before any process starts.
#include <cstdint>
#include <string>
#include <vector>

#include "spec/lr_schedule.hpp"
#include "tuners/trial_config.hpp"

namespace packtune::spec {

struct ModelSpec {
  std::string family = "mlp";  // "mlp" | "cnn" | "resnet" | "torchscript" | a model plugin's family
  int depth = 2;               // hidden layers (mlp) or conv blocks (cnn)
  int width = 256;             // hidden units (mlp) or the fc layer after the convs (cnn; 0 = none)
  std::string activation = "relu";  // relu | tanh | gelu | sigmoid
  double dropout = 0.0;
  int channels = 16;           // first conv block (cnn) or stage (resnet); each further one doubles it
  int kernel = 3;
  bool batch_norm = true;
  int stages = 3;              // resnet: stages of basic blocks, each after the first halves the image
  int blocks = 1;              // resnet: basic blocks per stage
  // A model plugin's family: its own hyper-parameters, every declared one with its default
  // filled in (spec/declared_families.hpp). "torchscript": its "path", the .pt file's absolute
  // path (the config's is resolved beside it), and the module attributes it sets. Empty for
  // the other built-in families.
  tuners::TrialConfig params;

  bool operator==(const ModelSpec& o) const;
};

namespace optimizer_key {  // the types of spec/optimizers.def's keys
using real = double;
using flag = bool;
}  // namespace optimizer_key

struct OptimizerSpec {
  std::string name = "sgd";  // a row of spec/optimizers.def (spec/optimizer_table.hpp)
  // lr (the base rate, which the schedule scales), momentum, ...: one field per key of the table.
#define OPTIMIZER_KEY(field, type, default_value, low, high, perturbable, doc) optimizer_key::type field = default_value;
#include "spec/optimizers.def"
  LrSchedule schedule;
  double grad_clip_norm = 0;  // > 0: the member's gradients are scaled to at most this norm
};

struct TrialSpec {
  ModelSpec model;
  OptimizerSpec optimizer;
  int batch_size = 128;
  double label_smoothing = 0;  // classification: cross-entropy against (1 - e) one-hot + e uniform
};

// Throws InputError naming `where.<key>` for an unknown key, a wrong type or a value out of
// range. Every key of `config` must be a known hyper-parameter: a built-in family's, or for a
// plugin family (DeclaredFamilies) one it declares, and the common optimizer and batch keys.
TrialSpec parse_trial_spec(const tuners::TrialConfig& config, const std::string& where = "model");

// The names parse_trial_spec accepts, for error messages and docs.
const std::vector<std::string>& known_hyperparameters();
// The keys every family takes, a plugin's too: the optimizer's, its schedule's, the loss's and
// the batch size (declared once, in trial_spec.cpp's table).
const std::vector<std::string>& training_hyperparameters();
// Those a trial may change while it trains, keeping its weights' shapes and its optimizer's
// state: what population-based training can perturb. The rest (family, widths, optimizer,
// batch size, a plugin family's values) define what the checkpoint holds.
const std::vector<std::string>& perturbable_hyperparameters();

// Integer count of parameters and per-sample activations of the model, for the memory model.
struct ModelShape {
  std::int64_t parameters = 0;
  std::int64_t largest_parameter = 0;       // elements of the biggest weight tensor
  std::int64_t activations_per_sample = 0;  // floats kept for backward, per input example
  std::int64_t flops_per_sample = 0;        // forward multiply-adds x 2, per input example
};
// A plugin family's shape is unknown (all zero): its memory is what an actor measures.
ModelShape model_shape(const ModelSpec& spec, int channels, int height, int width, int classes);
// Whether the family is a model plugin's.
bool plugin_family(const ModelSpec& spec);
// Whether the model is a TorchScript module loaded from the file params["path"].
bool torchscript_family(const ModelSpec& spec);
// The .pt file of a torchscript model; throws Error for another family.
const std::string& torchscript_path(const ModelSpec& spec);
// The module attributes a torchscript trial sets before it trains: every key of its config
// that is neither "family", "path" nor a training key, with its value.
tuners::TrialConfig torchscript_attributes(const ModelSpec& spec);
// A value's kind, as the checks of a module's attributes name it: "bool", "integer", "real" or
// "string".
std::string attribute_kind(const tuners::ParamValue& value);
// Whether no formula knows the model's shape (a plugin's family, a TorchScript module): the
// planner then waits for what an actor measures.
bool measured_family(const ModelSpec& spec);
// Whether trials of the model may train fused as one model. A TorchScript module may not: its
// members are separate modules that share the pack's data stream (packed, not fused).
bool fuses(const ModelSpec& spec);

// Trials with equal keys can train in one fused model: everything that changes the layer
// sequence (family, depth, activation, whether dropout layers exist; a CNN's kernel, batch
// norm and whether it has an fc layer) and the batch size. Widths, CNN channels and the
// optimizer (sgd, adam, adamw) may differ: narrower members are padded to the widest.
std::string fusion_key(const TrialSpec& spec);
// A plugin family's keys come from its declared roles: Structure values in the fusion key,
// Width values in the unpadded key and the shape key, Value values in none (they fuse freely).
// fusion_key plus the widths and CNN channels: trials with equal keys fuse without padding,
// and then a member's arithmetic is the same, bit for bit, in a unit of any size as alone in a
// unit of one (docs/planner.md, Reproducibility). Optimizers may still differ.
std::string unpadded_fusion_key(const TrialSpec& spec);

// The exact shape: fusion_key plus widths, channels and the optimizer's name, i.e.
// everything that changes a trial's memory or speed. Memory and throughput are calibrated
// per shape_key.
std::string shape_key(const TrialSpec& spec);

// Validation examples evaluated at once per member: one training batch's worth, so that
// evaluation (which keeps no activations for backward) needs less memory than a step.
std::int64_t evaluation_chunk(int batch_size);

}  // namespace packtune::spec
