#include "actors/optimizer_step.hpp"

#include "packtune/error.hpp"

namespace packtune::actors {

std::unique_ptr<OptimizerStep> make_optimizer_step(spec::OptimizerKind kind) {
  switch (kind) {
#define OPTIMIZER(kind, name, slots, decay, adaptive, doc) \
  case spec::OptimizerKind::kind:                     \
    return make_optimizer_step<spec::OptimizerKind::kind>();
#include "spec/optimizers.def"
  }
  throw Error("no step for optimizer kind " + std::to_string(static_cast<int>(kind)));
}

}  // namespace packtune::actors
