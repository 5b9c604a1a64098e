#include "datasets/data_arrays.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "packtune/error.hpp"

namespace packtune::datasets {
namespace {

// What scan_x holds at once.
constexpr std::uint64_t kScanBytes = std::uint64_t{16} << 20;

[[noreturn]] void fail(const ArrayInfo& info, const std::string& what) { throw InputError(info.where + ": " + what); }

std::string rank_text(const ArrayInfo& info) {
  return "rank " + std::to_string(info.shape.size()) + " (shape " + info.shape_text() + ")";
}

std::vector<std::uint32_t> x_sample_shape(const ArrayInfo& x) {
  if (x.dtype != DType::UInt8 && x.dtype != DType::Float32) {
    fail(x, "dtype " + x.dtype_text + " unsupported; expected uint8 (images) or float32 (images or feature rows)");
  }
  if (x.shape.size() < 2 || x.shape.size() > 4) {
    fail(x, rank_text(x) + " unsupported; expected [N, D] feature rows, [N, H, W] or [N, C, H, W] images");
  }
  if (x.shape.size() == 2 && x.dtype != DType::Float32) {
    fail(x, "feature rows [N, D] of dtype " + x.dtype_text + " unsupported; expected float32 (uint8 is for images)");
  }
  if (x.rows() == 0) fail(x, "no samples (shape " + x.shape_text() + ")");
  if (x.row_elements() == 0) fail(x, "empty samples (shape " + x.shape_text() + ")");
  if (x.rows() > std::numeric_limits<std::uint32_t>::max()) fail(x, "more than 4294967295 samples");
  std::vector<std::uint32_t> shape;
  for (std::size_t i = 1; i < x.shape.size(); ++i) {
    if (x.shape[i] > std::numeric_limits<std::uint32_t>::max()) fail(x, "implausibly large shape " + x.shape_text());
    shape.push_back(static_cast<std::uint32_t>(x.shape[i]));
  }
  if (shape.size() == 2) shape.insert(shape.begin(), 1);  // [N, H, W]: one channel
  return shape;
}

template <class T>
void to_int64(const std::vector<std::uint8_t>& raw, std::vector<std::int64_t>& out) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    T v;
    std::memcpy(&v, raw.data() + i * sizeof(T), sizeof(T));
    // uint64 labels past int64's range are out of any range: kept as the largest int64 (a
    // message reads the label itself from the raw bytes, label_text in read_labels).
    if constexpr (std::is_same_v<T, std::uint64_t>) {
      out[i] = v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
                   ? std::numeric_limits<std::int64_t>::max()
                   : static_cast<std::int64_t>(v);
    } else {
      out[i] = static_cast<std::int64_t>(v);
    }
  }
}

void check_finite(const ArrayInfo& info, const float* values, std::size_t n, std::uint64_t first_row,
                  std::uint64_t row_elements) {
  for (std::size_t i = 0; i < n; ++i) {
    if (!std::isfinite(values[i])) {
      fail(info, std::string(std::isnan(values[i]) ? "NaN" : "Inf") + " in row " +
                     std::to_string(first_row + i / row_elements));
    }
  }
}

std::vector<float> read_floats(ArrayReader& reader, std::uint64_t begin, std::uint64_t end) {
  std::vector<float> out((end - begin) * reader.info().row_elements());
  if (!out.empty()) reader.read_rows(begin, end, out.data());
  check_finite(reader.info(), out.data(), out.size(), begin, reader.info().row_elements());
  return out;
}

}  // namespace

ArrayPair open_pair(const DataOptions& options, bool test) {
  ArrayPair pair;
  if (options.format == DataFormat::Hdf5) {
    const auto& path = test ? options.test_path : options.path;
    if (path.empty() && test) return pair;
    if (path.empty()) throw InputError("data.path: no file given; format hdf5 reads x and y from one HDF5 file");
    const std::string key = test ? "data.test_path" : "data.path";
    pair.x = open_hdf5(key, test ? key : "data.x", path, options.x);
    pair.y = open_hdf5(key, test ? key : "data.y", path, options.y);
  } else if (options.format == DataFormat::Npy) {
    const auto& x = test ? options.test_x : options.x;
    const auto& y = test ? options.test_y : options.y;
    if (x.empty() && y.empty()) return pair;
    pair.x = open_npy(test ? "data.test_x" : "data.x", x);
    pair.y = open_npy(test ? "data.test_y" : "data.y", y);
  }
  return pair;
}

PairLayout layout_of(const ArrayPair& pair, Task task) {
  const auto& x = pair.x->info();
  const auto& y = pair.y->info();
  PairLayout layout;
  layout.sample_shape = x_sample_shape(x);
  layout.x_type = x.dtype == DType::UInt8 ? ElementType::UInt8 : ElementType::Float32;
  if (task == Task::Classification) {
    if (!is_integer(y.dtype)) {
      fail(y, "dtype " + y.dtype_text + " unsupported for labels; expected an integer dtype (for regression "
              "targets set \"task\": \"regression\")");
    }
    if (y.shape.size() != 1) fail(y, rank_text(y) + " unsupported for labels; expected [N]");
  } else {
    if (y.dtype != DType::Float32) {
      fail(y, "dtype " + y.dtype_text + " unsupported for regression targets; expected float32");
    }
    if (y.shape.size() != 1 && y.shape.size() != 2) {
      fail(y, rank_text(y) + " unsupported for regression targets; expected [N] or [N, T]");
    }
    if (y.row_elements() == 0 || y.row_elements() > std::numeric_limits<std::uint32_t>::max()) {
      fail(y, "shape " + y.shape_text() + " has no targets per sample");
    }
    layout.target_size = static_cast<std::uint32_t>(y.row_elements());
  }
  if (y.rows() != x.rows()) {
    fail(y, std::to_string(y.rows()) + " rows, but " + x.where.substr(x.where.find(": ") + 2) + " has " +
                std::to_string(x.rows()) + " samples; expected one " +
                (task == Task::Classification ? "label" : "target row") + " per sample");
  }
  layout.count = static_cast<std::uint32_t>(x.rows());
  return layout;
}

std::vector<std::int64_t> read_labels(ArrayReader& y, std::uint64_t begin, std::uint64_t end, std::uint32_t classes,
                                      const std::string& classes_from) {
  const auto& info = y.info();
  std::vector<std::uint8_t> raw((end - begin) * dtype_bytes(info.dtype));
  if (!raw.empty()) y.read_rows(begin, end, raw.data());
  std::vector<std::int64_t> labels(end - begin);
  switch (info.dtype) {
    case DType::UInt8: to_int64<std::uint8_t>(raw, labels); break;
    case DType::Int8: to_int64<std::int8_t>(raw, labels); break;
    case DType::UInt16: to_int64<std::uint16_t>(raw, labels); break;
    case DType::Int16: to_int64<std::int16_t>(raw, labels); break;
    case DType::UInt32: to_int64<std::uint32_t>(raw, labels); break;
    case DType::Int32: to_int64<std::int32_t>(raw, labels); break;
    case DType::UInt64: to_int64<std::uint64_t>(raw, labels); break;
    case DType::Int64: to_int64<std::int64_t>(raw, labels); break;
    default: fail(info, "dtype " + info.dtype_text + " unsupported for labels; expected an integer dtype");
  }
  // The label as the file holds it: a uint64 past int64's range is not the int64 it was kept as.
  const auto label_text = [&](std::size_t i) {
    if (info.dtype != DType::UInt64) return std::to_string(labels[i]);
    std::uint64_t v;
    std::memcpy(&v, raw.data() + i * sizeof v, sizeof v);
    return std::to_string(v);
  };
  // Training labels set the classes (the largest plus one); test labels must be among them.
  std::int64_t high = classes;
  if (classes == 0 && !labels.empty()) {
    const auto most = std::max_element(labels.begin(), labels.end());
    if (*most >= kMaxClasses) {
      const auto i = static_cast<std::size_t>(most - labels.begin());
      fail(info, "label " + label_text(i) + " in row " + std::to_string(begin + i) + " asks for more than the " +
                     std::to_string(kMaxClasses) + " classes packtune allows");
    }
    high = *most + 1;
  }
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (labels[i] < 0 || labels[i] >= high) {
      fail(info, "label " + label_text(i) + " in row " + std::to_string(begin + i) + " outside 0.." +
                     std::to_string(high - 1) + classes_from);
    }
  }
  return labels;
}

std::uint32_t classes_of(const std::vector<std::int64_t>& labels) {
  const auto most = std::max_element(labels.begin(), labels.end());
  return most == labels.end() ? 0 : static_cast<std::uint32_t>(*most + 1);
}

Dataset read_examples(const ArrayPair& pair, const PairLayout& layout, Task task, std::uint64_t begin,
                      std::uint64_t end, std::uint32_t classes, const std::string& classes_from) {
  Dataset d;
  d.count = static_cast<std::uint32_t>(end - begin);
  d.sample_shape = layout.sample_shape;
  d.x_type = layout.x_type;
  d.task = task;
  d.x.resize(d.count * d.sample_size() * d.element_bytes());
  if (!d.x.empty()) pair.x->read_rows(begin, end, d.x.data());
  if (d.x_type == ElementType::Float32) {
    check_finite(pair.x->info(), reinterpret_cast<const float*>(d.x.data()), d.count * d.sample_size(), begin,
                 d.sample_size());
  }
  if (task == Task::Classification) {
    d.labels = read_labels(*pair.y, begin, end, classes, classes_from);
    d.classes = classes;
  } else {
    d.targets = read_floats(*pair.y, begin, end);
    d.target_size = layout.target_size;
  }
  return d;
}

void scan_x(const ArrayPair& pair, const PairLayout& layout) {
  const auto& info = pair.x->info();
  const std::uint64_t row_bytes = info.row_elements() * dtype_bytes(info.dtype);
  const std::uint64_t rows = std::max<std::uint64_t>(1, kScanBytes / row_bytes);
  std::vector<std::uint8_t> piece(std::min<std::uint64_t>(rows, layout.count) * row_bytes);
  for (std::uint64_t begin = 0; begin < layout.count; begin += rows) {
    const auto end = std::min<std::uint64_t>(layout.count, begin + rows);
    pair.x->read_rows(begin, end, piece.data());
    if (layout.x_type == ElementType::Float32) {
      check_finite(info, reinterpret_cast<const float*>(piece.data()), (end - begin) * info.row_elements(), begin,
                   info.row_elements());
    }
  }
}

void scan_targets(const ArrayPair& pair, const PairLayout& layout) { read_floats(*pair.y, 0, layout.count); }

}  // namespace packtune::datasets
