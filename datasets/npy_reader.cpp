// NumPy .npy files (format versions 1 to 3): the magic, a little-endian header length, and a
// Python dict literal with descr, fortran_order and shape, then the elements. Read here rather
// than with a library: xtensor's load_npy (the one maintained C++ reader) needs the element type
// at compile time, and a user's file tells it only at run time.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "datasets/array_file.hpp"
#include "packtune/error.hpp"

namespace packtune::datasets {
namespace {

// A header longer than this is not one numpy writes (it pads to 64 bytes past a short dict).
constexpr std::uint32_t kMaxHeaderBytes = 1 << 20;

struct Descr {
  DType dtype;
  std::size_t bytes;
};

// numpy's type strings: byte order (< little, > big, | not applicable, = native), kind, size.
DType dtype_of(char kind, int size) {
  if (kind == 'u') {
    return size == 1 ? DType::UInt8 : size == 2 ? DType::UInt16 : size == 4 ? DType::UInt32
         : size == 8 ? DType::UInt64 : DType::Other;
  }
  if (kind == 'i') {
    return size == 1 ? DType::Int8 : size == 2 ? DType::Int16 : size == 4 ? DType::Int32
         : size == 8 ? DType::Int64 : DType::Other;
  }
  if (kind == 'f') return size == 4 ? DType::Float32 : size == 8 ? DType::Float64 : DType::Other;
  return DType::Other;
}

class NpyReader : public ArrayReader {
 public:
  NpyReader(const std::string& key, const std::string& path) : path_(path) {
    info_.where = key + ": " + path;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) fail("file not found");
    const auto size = std::filesystem::file_size(path, ec);
    if (ec) fail("cannot read the file (" + ec.message() + ")");
    if (size == 0) fail("empty file (0 bytes)");
    in_.open(path, std::ios::binary);
    if (!in_) fail("cannot open the file");
    read_header(size);
  }

  void read_rows(std::uint64_t begin, std::uint64_t end, void* out) override {
    const std::uint64_t row = info_.row_elements() * dtype_bytes(info_.dtype);
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(data_offset_ + begin * row));
    in_.read(static_cast<char*>(out), static_cast<std::streamsize>((end - begin) * row));
    if (!in_) fail("cannot read rows " + std::to_string(begin) + " to " + std::to_string(end));
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw InputError(info_.where + ": " + what); }

  void read_header(std::uint64_t file_size) {
    char magic[8];
    if (!in_.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) fail("not a NumPy .npy file (no \\x93NUMPY magic)");
    const int major = static_cast<unsigned char>(magic[6]);
    if (major < 1 || major > 3) fail(".npy format version " + std::to_string(major) + " is not 1, 2 or 3");
    unsigned char len[4] = {0, 0, 0, 0};
    const int len_bytes = major == 1 ? 2 : 4;
    if (!in_.read(reinterpret_cast<char*>(len), len_bytes)) fail("truncated .npy header");
    const std::uint32_t header_bytes = len[0] | len[1] << 8 | len[2] << 16 | static_cast<std::uint32_t>(len[3]) << 24;
    if (header_bytes > kMaxHeaderBytes) fail("implausibly long .npy header (" + std::to_string(header_bytes) + " bytes)");
    std::string header(header_bytes, '\0');
    if (!in_.read(header.data(), header_bytes)) fail("truncated .npy header");
    data_offset_ = 8 + len_bytes + header_bytes;
    parse_dict(header);
    const std::uint64_t elements = info_.rows() * info_.row_elements();
    const std::uint64_t bytes = elements * dtype_bytes(info_.dtype);
    if (info_.dtype != DType::Other && file_size - data_offset_ < bytes) {
      fail("the file holds " + std::to_string(file_size - data_offset_) + " bytes of data, shape " +
           info_.shape_text() + " needs " + std::to_string(bytes) + " (truncated?)");
    }
  }

  // The value after 'key': in numpy's dict literal.
  std::size_t value_at(const std::string& header, const char* key) const {
    const auto at = header.find(std::string("'") + key + "'");
    if (at == std::string::npos) fail(std::string("the .npy header has no '") + key + "'");
    auto colon = header.find(':', at);
    if (colon == std::string::npos) fail("malformed .npy header");
    ++colon;
    while (colon < header.size() && header[colon] == ' ') ++colon;
    return colon;
  }

  void parse_dict(const std::string& header) {
    auto d = value_at(header, "descr");
    const char quote = d < header.size() ? header[d] : '\0';
    const auto close = header.find(quote, d + 1);
    if ((quote != '\'' && quote != '"') || close == std::string::npos) {
      fail("the .npy header's descr is not a simple type (a structured array?)");
    }
    info_.dtype_text = header.substr(d + 1, close - d - 1);
    const auto& t = info_.dtype_text;
    if (t.size() >= 3 && t[0] == '>' && t.substr(1) != "u1" && t.substr(1) != "i1") {
      fail("big-endian dtype " + t + "; save it little-endian (numpy: a.astype(a.dtype.newbyteorder('<')))");
    }
    if (t.size() >= 3 && (t[0] == '<' || t[0] == '|' || t[0] == '=' || t[0] == '>') &&
        std::all_of(t.begin() + 2, t.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      info_.dtype = dtype_of(t[1], std::atoi(t.c_str() + 2));
    }
    const auto f = value_at(header, "fortran_order");
    if (header.compare(f, 4, "True") == 0) fail("fortran_order is True; save it in C order (numpy: np.ascontiguousarray)");
    if (header.compare(f, 5, "False") != 0) fail("malformed .npy header (fortran_order)");
    auto s = value_at(header, "shape");
    if (s >= header.size() || header[s] != '(') fail("malformed .npy header (shape)");
    const auto end = header.find(')', s);
    if (end == std::string::npos) fail("malformed .npy header (shape)");
    std::uint64_t product = 1;
    for (std::size_t i = s + 1; i < end;) {
      while (i < end && (header[i] == ' ' || header[i] == ',')) ++i;
      if (i == end) break;
      if (!std::isdigit(static_cast<unsigned char>(header[i]))) fail("malformed .npy header (shape)");
      std::uint64_t dim = 0;
      for (; i < end && std::isdigit(static_cast<unsigned char>(header[i])); ++i) {
        if (dim > (std::numeric_limits<std::uint64_t>::max() - 9) / 10) fail("implausibly large .npy shape");
        dim = dim * 10 + static_cast<std::uint64_t>(header[i] - '0');
      }
      if (dim != 0 && product > (std::uint64_t{1} << 62) / dim) fail("implausibly large .npy shape");
      product *= dim == 0 ? 1 : dim;
      info_.shape.push_back(dim);
    }
  }

  std::string path_;
  std::ifstream in_;
  std::uint64_t data_offset_ = 0;
};

}  // namespace

std::unique_ptr<ArrayReader> open_npy(const std::string& key, const std::string& path) {
  return std::make_unique<NpyReader>(key, path);
}

}  // namespace packtune::datasets
