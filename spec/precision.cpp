#include "spec/precision.hpp"

#include "packtune/error.hpp"

namespace packtune::spec {

std::string to_string(Precision precision) {
  switch (precision) {
    case Precision::Auto: return "auto";
    case Precision::Fp32: return "fp32";
    case Precision::Tf32: return "tf32";
    case Precision::Bf16: return "bf16";
  }
  return "auto";
}

Precision parse_precision(const std::string& text, const std::string& where) {
  for (auto p : {Precision::Auto, Precision::Fp32, Precision::Tf32, Precision::Bf16}) {
    if (text == to_string(p)) return p;
  }
  throw InputError(where + ": unknown precision \"" + text + "\"; expected auto, fp32, tf32 or bf16");
}

Precision resolve_precision(Precision precision, const std::string& device) {
  const bool cpu = device.rfind("cuda", 0) != 0;
  if (precision == Precision::Bf16 && cpu) {
    // LibTorch has CPU autocast, but without bfloat16 units it converts every operand: a
    // ResNet step took 17x as long in bf16 as in fp32 on the 2-core development VM (AMD EPYC
    // without AVX-512; docs/models.md#precision). packtune's CPU path stays float32.
    throw InputError("precision bf16 is for GPUs, and the device is " + device +
                     ": give precision auto or fp32 for CPU actors");
  }
  if (precision == Precision::Auto) return cpu ? Precision::Fp32 : Precision::Tf32;
  if (precision == Precision::Tf32 && cpu) return Precision::Fp32;
  return precision;
}

}  // namespace packtune::spec
