#include "actors/member_step.hpp"

#include <cmath>

namespace packtune::actors {

namespace {

// torch::optim::AdamOptions' default, added in float as LibTorch adds a Scalar to a float tensor.
constexpr float kEps = 1e-8f;

void adam(const MemberStep& m, float* __restrict w, const float* __restrict g, float* __restrict s0,
          float* __restrict s1, std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j) {
    float grad = g[j];
    if (m.l2 != 0) grad = grad + w[j] * m.l2;
    const float weight = m.decay != 1 ? w[j] * m.decay : w[j];
    s0[j] = s0[j] * m.c0 + grad * m.c1;
    s1[j] = s1[j] * m.b2 + grad * grad * m.omb2;
    const float denom = std::sqrt(s1[j]) / m.bias2 + kEps;
    w[j] = weight - s0[j] / denom * m.rate;
  }
}

void sgd(const MemberStep& m, float* __restrict w, const float* __restrict g, float* __restrict s0, std::int64_t n) {
  for (std::int64_t j = 0; j < n; ++j) {
    float grad = g[j];
    if (m.l2 != 0) grad = grad + w[j] * m.l2;
    // A zero buffer times momentum plus the gradient is the gradient exactly: torch's
    // first-step clone.
    s0[j] = s0[j] * m.c0 + grad;
    const float direction = m.nesterov ? grad + s0[j] * m.c0 : s0[j];
    w[j] = w[j] - direction * m.rate;
  }
}

}  // namespace

void member_step(const MemberStep& m, float* w, const float* g, float* s0, float* s1, std::int64_t n) {
  if (m.adam) {
    adam(m, w, g, s0, s1, n);
  } else {
    sgd(m, w, g, s0, n);
  }
}

}  // namespace packtune::actors
