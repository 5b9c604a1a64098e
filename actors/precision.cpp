#include "actors/precision.hpp"

#include "packtune/error.hpp"

namespace packtune::actors {

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
    // LibTorch has CPU autocast, but packtune's CPU path is float32: its member-by-member
    // kernels and their bit-for-bit tests are, and no CPU figure says bfloat16 pays there.
    throw InputError("precision bf16 is for GPUs, and the device is " + device +
                     ": give precision auto or fp32 for CPU actors");
  }
  if (precision == Precision::Auto) return cpu ? Precision::Fp32 : Precision::Tf32;
  if (precision == Precision::Tf32 && cpu) return Precision::Fp32;
  return precision;
}

}  // namespace packtune::actors
