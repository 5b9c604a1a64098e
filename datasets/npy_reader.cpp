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
#include <optional>
#include <set>

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

  // The header is a Python dict literal of exactly descr, fortran_order and shape (numpy's
  // read_array_header refuses any other set of keys), padded with spaces to a newline. Parsed
  // strictly: a dict cut short, a key given twice or bytes after it is a file that something
  // other than numpy wrote, or damaged, and guessing what it meant could misread every element.
  void parse_dict(const std::string& header) {
    std::size_t i = 0;
    const auto skip_spaces = [&] {
      while (i < header.size() && std::isspace(static_cast<unsigned char>(header[i]))) ++i;
    };
    const auto malformed = [&](const std::string& why) { fail("malformed .npy header (" + why + ")"); };
    const auto quoted = [&](const std::string& what) {
      const char quote = i < header.size() ? header[i] : '\0';
      const auto close = quote == '\'' || quote == '"' ? header.find(quote, i + 1) : std::string::npos;
      if (close == std::string::npos) return std::optional<std::string>();
      std::string text = header.substr(i + 1, close - i - 1);
      if (text.find('\\') != std::string::npos) malformed(what + " with an escape");
      i = close + 1;
      return std::optional<std::string>(std::move(text));
    };
    skip_spaces();
    if (i >= header.size() || header[i] != '{') malformed("no opening brace");
    ++i;
    std::set<std::string> seen;
    bool closed = false;
    while (!closed) {
      skip_spaces();
      if (i >= header.size()) malformed("no closing brace");
      if (header[i] == '}') break;  // {} or a trailing comma, as numpy writes ", }"
      const auto key = quoted("a key");
      if (!key) malformed("expected a quoted key at byte " + std::to_string(i));
      if (*key != "descr" && *key != "fortran_order" && *key != "shape") {
        malformed("unknown key '" + *key + "'; expected descr, fortran_order and shape");
      }
      if (!seen.insert(*key).second) malformed("'" + *key + "' given twice");
      skip_spaces();
      if (i >= header.size() || header[i] != ':') malformed("no ':' after '" + *key + "'");
      ++i;
      skip_spaces();
      if (*key == "descr") {
        parse_descr(quoted("descr"));
      } else if (*key == "fortran_order") {
        if (header.compare(i, 4, "True") == 0) fail("fortran_order is True; save it in C order (numpy: np.ascontiguousarray)");
        if (header.compare(i, 5, "False") != 0) malformed("fortran_order");
        i += 5;
      } else {
        i = parse_shape(header, i);
      }
      skip_spaces();
      if (i >= header.size()) malformed("no closing brace");
      if (header[i] == ',') {
        ++i;
      } else if (header[i] == '}') {
        closed = true;
      } else {
        malformed("expected ',' or '}' after '" + *key + "'");
      }
    }
    ++i;  // the brace
    skip_spaces();
    if (i < header.size()) {
      // The padding after them is numpy's: count what is not.
      auto last = header.size();
      while (std::isspace(static_cast<unsigned char>(header[last - 1]))) --last;
      malformed(std::to_string(last - i) + " byte(s) after the dict");
    }
    for (const char* key : {"descr", "fortran_order", "shape"}) {
      if (!seen.count(key)) fail(std::string("the .npy header has no '") + key + "'");
    }
  }

  void parse_descr(const std::optional<std::string>& descr) {
    if (!descr) fail("the .npy header's descr is not a simple type (a structured array?)");
    info_.dtype_text = *descr;
    const auto& t = info_.dtype_text;
    if (t.size() >= 3 && t[0] == '>' && t.substr(1) != "u1" && t.substr(1) != "i1") {
      fail("big-endian dtype " + t + "; save it little-endian (numpy: a.astype(a.dtype.newbyteorder('<')))");
    }
    if (t.size() >= 3 && (t[0] == '<' || t[0] == '|' || t[0] == '=' || t[0] == '>') &&
        std::all_of(t.begin() + 2, t.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
      info_.dtype = dtype_of(t[1], std::atoi(t.c_str() + 2));
    }
  }

  // A tuple of non-negative integers at `i`: (), (N,) or (N, M, ...). Returns the index past it.
  std::size_t parse_shape(const std::string& header, std::size_t i) {
    const auto malformed = [&] { fail("malformed .npy header (shape)"); };
    if (i >= header.size() || header[i] != '(') malformed();
    ++i;
    std::uint64_t product = 1;
    bool comma_after_last = true;  // a tuple of one needs its comma, (N,)
    for (;;) {
      while (i < header.size() && header[i] == ' ') ++i;
      if (i >= header.size()) malformed();
      if (header[i] == ')') break;
      if (!std::isdigit(static_cast<unsigned char>(header[i]))) malformed();
      std::uint64_t dim = 0;
      for (; i < header.size() && std::isdigit(static_cast<unsigned char>(header[i])); ++i) {
        if (dim > (std::numeric_limits<std::uint64_t>::max() - 9) / 10) fail("implausibly large .npy shape");
        dim = dim * 10 + static_cast<std::uint64_t>(header[i] - '0');
      }
      if (dim != 0 && product > (std::uint64_t{1} << 62) / dim) fail("implausibly large .npy shape");
      product *= dim == 0 ? 1 : dim;
      info_.shape.push_back(dim);
      while (i < header.size() && header[i] == ' ') ++i;
      comma_after_last = i < header.size() && header[i] == ',';
      if (comma_after_last) {
        ++i;
      } else if (i >= header.size() || header[i] != ')') {
        malformed();
      }
    }
    if (info_.shape.size() == 1 && !comma_after_last) malformed();  // (N) is N, not a tuple
    return i + 1;
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
