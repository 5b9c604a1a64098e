#pragma once
// The optimizers as rows of spec/optimizers.def: what each is called, which state it keeps, how
// it decays weights. Whatever differs between optimizers outside their steps reads a row here,
// never a comparison of names.
#include <string>
#include <vector>

namespace packtune::spec {

enum class OptimizerKind {
#define OPTIMIZER(kind, name, slots, decay, adaptive, doc) kind,
#include "spec/optimizers.def"
};

enum class WeightDecay {
  L2,        // weight_decay * w joins the gradient (torch::optim's SGD, Adam, RMSprop)
  Decoupled  // the weights shrink by lr * weight_decay before the update (AdamW)
};

struct OptimizerRow {
  OptimizerKind kind;
  std::string name;
  std::vector<std::string> slots;  // state tensors per parameter, in checkpoint order
  WeightDecay decay;
  bool adaptive;  // keeps a running second moment: more temporaries a step (memory model)
  std::string doc;
};

// A hyper-parameter the optimizers read (OptimizerSpec's field of that name), for the docs.
struct OptimizerKeyRow {
  std::string name;
  std::string type;  // "real" or "flag"
  double default_value, low, high;
  bool perturbable;
  std::string doc;
};

const std::vector<OptimizerRow>& optimizer_rows();
const OptimizerRow& optimizer_row(OptimizerKind kind);
// The row of the optimizer named; an unknown name is an InputError at `at` that lists the known.
const OptimizerRow& optimizer_row(const std::string& name, const std::string& at = "optimizer");
// The table never changes: built once.
const std::vector<std::string>& optimizer_names();
// How many state tensors per parameter torch::optim keeps for one trial of `row`: each of its
// slots, but a momentum_buffer only with momentum (packing's memory model).
int kept_slots(const OptimizerRow& row, double momentum);
const std::vector<OptimizerKeyRow>& optimizer_keys();

}  // namespace packtune::spec
