#include "datasets/array_file.hpp"

namespace packtune::datasets {

bool is_integer(DType dtype) { return dtype != DType::Float32 && dtype != DType::Float64 && dtype != DType::Other; }

std::size_t dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::UInt8:
    case DType::Int8:
      return 1;
    case DType::UInt16:
    case DType::Int16:
      return 2;
    case DType::UInt32:
    case DType::Int32:
    case DType::Float32:
      return 4;
    case DType::UInt64:
    case DType::Int64:
    case DType::Float64:
      return 8;
    case DType::Other:
      break;
  }
  return 0;
}

std::uint64_t ArrayInfo::row_elements() const {
  std::uint64_t n = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) n *= shape[i];
  return n;
}

}  // namespace packtune::datasets
