#include <catch2/catch.hpp>

#include "packtune/error.hpp"
#include "spec/precision.hpp"

using namespace packtune::spec;

TEST_CASE("precision words parse and print back, and anything else names where it came from") {
  for (auto p : {Precision::Auto, Precision::Fp32, Precision::Tf32, Precision::Bf16}) {
    CHECK(parse_precision(to_string(p), "precision") == p);
  }
  CHECK_THROWS_AS(parse_precision("fp16", "precision"), packtune::InputError);
  CHECK_THROWS_WITH(parse_precision("BF16", "--precision"),
                    "--precision: unknown precision \"BF16\"; expected auto, fp32, tf32 or bf16");
}

TEST_CASE("auto is tf32 on a GPU and fp32 on a CPU; bf16 is refused on a CPU") {
  CHECK(resolve_precision(Precision::Auto, "cuda:0") == Precision::Tf32);
  CHECK(resolve_precision(Precision::Auto, "cpu") == Precision::Fp32);
  CHECK(resolve_precision(Precision::Fp32, "cuda:1") == Precision::Fp32);
  CHECK(resolve_precision(Precision::Tf32, "cpu") == Precision::Fp32);
  CHECK(resolve_precision(Precision::Bf16, "cuda:0") == Precision::Bf16);
  CHECK_THROWS_WITH(resolve_precision(Precision::Bf16, "cpu"),
                    Catch::Contains("precision bf16 is for GPUs, and the device is cpu"));
}
