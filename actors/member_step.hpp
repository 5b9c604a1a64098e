#pragma once
// One member's optimizer update over its rows of a stacked parameter, as a single pass of
// plain C++: FusedOptimizer's step on a CPU. ATen's whole-tensor form reads and writes the
// state once per operation (Adam: 13 passes and 6 temporaries), which on a CPU cost about
// as much as a small MLP's matmuls. Each element's arithmetic is the tensor form's, rounded to
// float at every operation and never contracted into FMAs, and it reads only the member's
// own hyper-parameters: a member steps bit for bit alike in a unit of any size, whether or
// not the CPU has FMA.
#include <cstdint>

namespace packtune::actors {

struct MemberStep {
  bool adam = false;       // Adam or AdamW; else SGD
  bool nesterov = false;   // SGD only
  float rate = 0;          // SGD's lr, or Adam's bias-corrected step size lr / (1 - beta1^step)
  float l2 = 0;            // weight decay joined to the gradient (SGD, Adam); 0: none
  float decay = 1;         // AdamW: the weights are first scaled by 1 - lr * wd; 1: none
  float c0 = 0, c1 = 1;    // slot 0 <- c0 * slot 0 + c1 * grad: momentum and 1, or beta1 and 1 - beta1
  float b2 = 0, omb2 = 0;  // Adam's slot 1 <- b2 * slot 1 + omb2 * grad^2
  float bias2 = 1;         // Adam: sqrt(1 - beta2^step)
};

// `n` elements of one member: weights `w`, gradient `g`, slot 0 `s0` and, for Adam, slot 1
// `s1` (else null).
void member_step(const MemberStep& m, float* w, const float* g, float* s0, float* s1, std::int64_t n);

}  // namespace packtune::actors
