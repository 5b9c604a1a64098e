#pragma once
// The number format a run trains in (the config's "precision"), apart from LibTorch: the config
// parser checks it without linking the training engine, and the actor applies it
// (actors/autocast.hpp).
//
//   fp32  every product in float32
//   tf32  float32 tensors; on a GPU, matrix products and convolutions on its TF32 tensor cores
//         (a 10-bit mantissa for the products' inputs, float32 sums)
//   bf16  autocast: products and convolutions in bfloat16, weights, optimizer and losses in
//         float32 (mixed precision with float32 master weights); GPUs only
//   auto  tf32 on a GPU, fp32 on a CPU (which has no TF32 units, so there the two are the same)
#include <string>

namespace packtune::spec {

enum class Precision { Auto, Fp32, Tf32, Bf16 };

std::string to_string(Precision precision);
// Throws InputError naming `where` for a word that is no precision.
Precision parse_precision(const std::string& text, const std::string& where);
// What `precision` means on `device` (cpu, cuda:N): never Auto. Throws InputError for bf16 on a
// CPU, where a CPU actor cannot honour it.
Precision resolve_precision(Precision precision, const std::string& device);

}  // namespace packtune::spec
