#include "datasets/idx.hpp"

#include <zlib.h>

#include <filesystem>
#include <memory>

#include "packtune/error.hpp"

namespace packtune::datasets {
namespace {

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

// gzread also reads uncompressed files transparently, so one path serves both forms.
void read_exact(gzFile file, void* out, std::size_t n, const std::string& path) {
  auto* p = static_cast<char*>(out);
  while (n > 0) {
    const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n, 1u << 30));
    const int got = gzread(file, p, chunk);
    if (got <= 0) {
      throw InputError(path + ": truncated or corrupt IDX file; re-download or regenerate it");
    }
    p += got;
    n -= static_cast<std::size_t>(got);
  }
}


GzFile open_idx(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) {
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

}  // namespace

std::vector<std::uint32_t> read_idx_dims(const std::string& path) {
  auto file = open_idx(path);
  return read_dims(file.get(), path);
}

IdxArray read_idx(const std::string& path, std::uint32_t limit) {
  auto file = open_idx(path);
  IdxArray out;
  out.dims = read_dims(file.get(), path);
  if (limit > 0 && out.dims[0] > limit) out.dims[0] = limit;
  std::size_t total = 1;
  for (const auto d : out.dims) total *= d;
  if (total > (std::size_t{1} << 34)) throw InputError(path + ": IDX dimensions are implausibly large");
  out.data.resize(total);
  read_exact(file.get(), out.data.data(), total, path);
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
