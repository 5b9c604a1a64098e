#pragma once
// IDX files (the MNIST / Fashion-MNIST format), plain or gzip-compressed.
// Header: two zero bytes, a type code (0x08 = unsigned byte), the number of dimensions, then
// each dimension as a big-endian uint32.
#include <cstdint>
#include <string>
#include <vector>

namespace packtune::datasets {

struct IdxArray {
  std::vector<std::uint32_t> dims;
  std::vector<std::uint8_t> data;  // row-major, size == product of dims
};

// Reads at most `limit` items along the first dimension (0 = all). Throws InputError for a
// missing file and for anything that is not a well-formed unsigned-byte IDX file.
IdxArray read_idx(const std::string& path, std::uint32_t limit = 0);
// The dimensions alone, from the header: what the planner needs without reading the images.
std::vector<std::uint32_t> read_idx_dims(const std::string& path);

// Writes an unsigned-byte IDX file, gzip-compressed when `path` ends in ".gz". Used by tests
// and by tools that cut slices of a data set.
void write_idx(const std::string& path, const IdxArray& array);

}  // namespace packtune::datasets
