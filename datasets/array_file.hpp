#pragma once
// One n-dimensional array of a user's data file: a NumPy .npy file or a dataset of an HDF5
// file. Its header (element type, shape) is read when it is opened; its rows are read on
// demand, so that a check can go over a file larger than the driver wants to hold at once.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace packtune::datasets {

// The element types packtune reads (anything else is Other, refused with its name).
enum class DType { UInt8, Int8, UInt16, Int16, UInt32, Int32, UInt64, Int64, Float32, Float64, Other };

bool is_integer(DType dtype);
std::size_t dtype_bytes(DType dtype);

// A shape as NumPy prints it, "(100, 3, 32, 32)" or "(10,)": the way users see their arrays.
template <typename Int>
std::string shape_text(const std::vector<Int>& shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

struct ArrayInfo {
  // The config key and the file (and dataset), the start of every message about the array:
  // `data.y: /p/d.h5 dataset "y"` or `data.x: /p/x.npy`.
  std::string where;
  DType dtype = DType::Other;
  std::string dtype_text;  // as the file names it ("<f8", "float64"), for messages
  std::vector<std::uint64_t> shape;

  std::uint64_t rows() const { return shape.empty() ? 0 : shape[0]; }
  std::uint64_t row_elements() const;  // the product of shape[1:]
  std::string shape_text() const { return datasets::shape_text(shape); }
};

class ArrayReader {
 public:
  virtual ~ArrayReader() = default;
  const ArrayInfo& info() const { return info_; }
  // Rows [begin, end) into `out`, row-major, native byte order, dtype_bytes(dtype) each.
  virtual void read_rows(std::uint64_t begin, std::uint64_t end, void* out) = 0;

 protected:
  ArrayInfo info_;
};

// Both throw InputError starting with `key: path` for a missing, empty or malformed file, a
// missing dataset, or a layout packtune does not read (Fortran order, big-endian .npy). An
// HDF5 file is named by one config key and its dataset by another (data.path, data.x): a
// fault of the file names `file_key`, one of the dataset `dataset_key`.
std::unique_ptr<ArrayReader> open_npy(const std::string& key, const std::string& path);
std::unique_ptr<ArrayReader> open_hdf5(const std::string& file_key, const std::string& dataset_key,
                                       const std::string& path, const std::string& dataset);

}  // namespace packtune::datasets
