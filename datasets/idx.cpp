#include "datasets/idx.hpp"

#include <libdeflate.h>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <new>
#include <optional>

#include "packtune/error.hpp"

namespace packtune::datasets {
namespace {

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

struct DecompressorFree {
  void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
};

// Past this many bytes of samples an IDX header is taken for garbage, not a data set.
constexpr std::size_t kMaxSampleBytes = std::size_t{1} << 34;
// DEFLATE's largest expansion: 258 bytes from 2 bits.
constexpr std::size_t kMaxDeflateRatio = 1032;

[[noreturn]] void corrupt(const std::string& path) {
  throw InputError(path + ": truncated or corrupt IDX file; re-download or regenerate it");
}

// gzread also reads uncompressed files transparently, so one path serves both forms.
void read_exact(gzFile file, void* out, std::size_t n, const std::string& path) {
  auto* p = static_cast<char*>(out);
  while (n > 0) {
    const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n, 1u << 30));
    const int got = gzread(file, p, chunk);
    if (got <= 0) corrupt(path);
    p += got;
    n -= static_cast<std::size_t>(got);
  }
}

GzFile open_idx(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) {
    const auto folder = std::filesystem::path(path).parent_path();
    if (!folder.empty() && !std::filesystem::is_directory(folder)) {
      throw InputError(path + ": data file not found: there is no folder " + folder.string() +
                       "; install dataset-fashion-mnist (scripts/setup.sh), or set data.dir in the config (or "
                       "PACKTUNE_DATA_DIR) to the folder of the IDX files");
    }
    throw InputError(path + ": data file not found; install dataset-fashion-mnist "
                            "(scripts/setup.sh), or set data.dir in the config or PACKTUNE_DATA_DIR");
  }
  GzFile file(gzopen(path.c_str(), "rb"));
  if (!file) throw InputError(path + ": cannot open data file");
  return file;
}

std::vector<std::uint32_t> read_dims(gzFile file, const std::string& path) {
  std::uint8_t magic[4];
  read_exact(file, magic, 4, path);
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || magic[3] == 0 || magic[3] > 4) {
    throw InputError(path + ": not an unsigned-byte IDX file (bad magic number)");
  }
  std::vector<std::uint32_t> dims;
  for (int i = 0; i < magic[3]; ++i) {
    std::uint8_t b[4];
    read_exact(file, b, 4, path);
    dims.push_back((std::uint32_t{b[0]} << 24) | (std::uint32_t{b[1]} << 16) | (std::uint32_t{b[2]} << 8) |
                   std::uint32_t{b[3]});
  }
  return dims;
}

std::size_t sample_bytes(const std::vector<std::uint32_t>& dims, const std::string& path) {
  std::size_t total = 1;
  for (const auto d : dims) {
    // Checked at each factor: four of up to 2^32 would overflow before a check at the end.
    if (d != 0 && total > kMaxSampleBytes / d) throw InputError(path + ": IDX dimensions are implausibly large");
    total *= d;
  }
  return total;
}

std::vector<std::uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw InputError(path + ": cannot open data file");
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(in.tellg()));
  in.seekg(0);
  if (!in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()))) {
    throw InputError(path + ": cannot read data file");
  }
  return bytes;
}

bool gzip_at(const std::vector<std::uint8_t>& bytes, std::size_t at) {
  return bytes.size() - at >= 2 && bytes[at] == 0x1f && bytes[at + 1] == 0x8b;
}

// The first `bytes` of a whole file's content: its gzip members decoded by libdeflate, which
// decodes whole buffers only, at about 2.5 times zlib's speed on Fashion-MNIST's images; a plain
// file as it is. Fewer bytes where the file is cut short, for the caller to say. nullopt where the
// members hold more than `bytes`: content past what the header describes, which zlib's stream
// stops before. Whatever follows the last member is ignored, as zlib's gzread ignores it.
// `bytes` comes from the header, never from the file's trailer (a damaged one could ask for 4 GiB).
std::optional<std::vector<std::uint8_t>> whole_content(const std::string& path, std::size_t bytes) {
  auto raw = read_file(path);
  if (!gzip_at(raw, 0)) {
    if (raw.size() > bytes) raw.resize(bytes);
    return raw;
  }
  const std::size_t n = raw.size();
  // DEFLATE expands a byte to at most 1032: a header that claims more is damaged, and is refused
  // before its claim is allocated.
  if (bytes / kMaxDeflateRatio > n) corrupt(path);
  std::vector<std::uint8_t> out(bytes);
  std::unique_ptr<libdeflate_decompressor, DecompressorFree> decompressor(libdeflate_alloc_decompressor());
  if (!decompressor) throw std::bad_alloc();
  std::size_t in = 0, produced = 0;
  while (in == 0 || (in < n && gzip_at(raw, in))) {
    std::size_t used = 0, got = 0;
    const auto result = libdeflate_gzip_decompress_ex(decompressor.get(), raw.data() + in, n - in,
                                                      out.data() + produced, out.size() - produced, &used, &got);
    if (result == LIBDEFLATE_INSUFFICIENT_SPACE) return std::nullopt;
    if (result != LIBDEFLATE_SUCCESS) corrupt(path);
    in += used;
    produced += got;
  }
  out.resize(produced);
  return out;
}

// The first `limit` items through zlib, which stops where they end: a slice of a large file
// costs what the slice does. With `to_end` the rest is read too, unkept, so that zlib checks the
// stream's end (a file cut short or damaged past the items is an error, as libdeflate finds it).
IdxArray read_prefix(const std::string& path, std::uint32_t limit, bool to_end = false) {
  auto file = open_idx(path);
  IdxArray out;
  out.dims = read_dims(file.get(), path);
  out.dims[0] = std::min(out.dims[0], limit);
  out.data.resize(sample_bytes(out.dims, path));
  read_exact(file.get(), out.data.data(), out.data.size(), path);
  if (to_end) {
    char rest[1 << 16];
    int got = 0;
    while ((got = gzread(file.get(), rest, sizeof rest)) > 0) {
    }
    int error = Z_OK;
    gzerror(file.get(), &error);  // a stream cut short ends as a plain end would, with Z_BUF_ERROR
    if (got < 0 || error != Z_OK) corrupt(path);
  }
  return out;
}

}  // namespace

std::vector<std::uint32_t> read_idx_dims(const std::string& path) {
  auto file = open_idx(path);
  return read_dims(file.get(), path);
}

IdxArray read_idx(const std::string& path, std::uint32_t limit) {
  IdxArray out;
  out.dims = read_idx_dims(path);
  if (limit > 0 && out.dims[0] > limit) return read_prefix(path, limit);
  const std::size_t header = 4 + 4 * out.dims.size();
  const auto total = sample_bytes(out.dims, path);
  auto content = whole_content(path, header + total);
  // More than the header describes, or damage that libdeflate could not tell from it.
  if (!content) return read_prefix(path, out.dims[0], /*to_end=*/true);
  if (content->size() < header + total) corrupt(path);
  content->erase(content->begin(), content->begin() + static_cast<std::ptrdiff_t>(header));
  out.data = std::move(*content);
  return out;
}

void write_idx(const std::string& path, const IdxArray& array) {
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  GzFile file(gzopen(path.c_str(), gz ? "wb" : "wbT"));
  if (!file) throw Error(path + ": cannot open for writing");
  std::vector<std::uint8_t> header = {0, 0, 0x08, static_cast<std::uint8_t>(array.dims.size())};
  for (auto d : array.dims) {
    for (int shift = 24; shift >= 0; shift -= 8) header.push_back(static_cast<std::uint8_t>(d >> shift));
  }
  if (gzwrite(file.get(), header.data(), static_cast<unsigned>(header.size())) !=
          static_cast<int>(header.size()) ||
      (!array.data.empty() &&
       gzwrite(file.get(), array.data.data(), static_cast<unsigned>(array.data.size())) !=
           static_cast<int>(array.data.size()))) {
    throw Error(path + ": write failed (disk full?)");
  }
}

}  // namespace packtune::datasets
