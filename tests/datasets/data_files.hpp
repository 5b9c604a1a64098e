#pragma once
// Small .npy and HDF5 files for the data tests: .npy written byte by byte as numpy writes it,
// HDF5 with its C API, so the readers are tested against files they did not write.
#include <hdf5.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace packtune::testing {

// A .npy file of `descr` ("<f4", "|u1", ...) and `shape` holding `bytes`; `version` 1 or 2.
inline void write_npy(const std::string& path, const std::string& descr, const std::vector<std::uint64_t>& shape,
                      const void* bytes, std::size_t size, int version = 1, bool fortran = false) {
  std::string shape_text = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) shape_text += (i ? ", " : "") + std::to_string(shape[i]);
  shape_text += shape.size() == 1 ? ",)" : ")";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
                       ", 'shape': " + shape_text + ", }";
  const std::size_t prefix = version == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY", 6);
  out.put(static_cast<char>(version));
  out.put(0);
  const auto len = static_cast<std::uint32_t>(header.size());
  for (std::size_t i = 0; i < (version == 1 ? 2u : 4u); ++i) out.put(static_cast<char>((len >> (8 * i)) & 0xff));
  out << header;
  out.write(static_cast<const char*>(bytes), static_cast<std::streamsize>(size));
}

// A version 1 .npy file whose header is `dict` as given, padded as numpy pads it, then `bytes`.
inline void write_npy_header(const std::string& path, std::string dict, const std::string& bytes) {
  while ((10 + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  out.put(static_cast<char>(dict.size() & 0xff));
  out.put(static_cast<char>(dict.size() >> 8));
  out << dict << bytes;
}

template <class T>
void write_npy(const std::string& path, const std::string& descr, const std::vector<std::uint64_t>& shape,
               const std::vector<T>& values, int version = 1) {
  write_npy(path, descr, shape, values.data(), values.size() * sizeof(T), version);
}

// A dataset `name` of `file_type` (H5T_STD_U8LE, H5T_IEEE_F32LE, ...) in the HDF5 file at
// `path` (created if missing), from native `values` of `memory_type`.
template <class T>
void write_h5(const std::string& path, const std::string& name, hid_t file_type, hid_t memory_type,
              const std::vector<std::uint64_t>& shape, const std::vector<T>& values) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  hid_t file = std::ifstream(path).good() ? H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT)
                                          : H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  std::vector<hsize_t> dims(shape.begin(), shape.end());
  hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  hid_t ds = H5Dcreate2(file, name.c_str(), file_type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (!values.empty()) H5Dwrite(ds, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
  H5Dclose(ds);
  H5Sclose(space);
  H5Fclose(file);
}

// `n` float32 rows of `d` features (row i holds i, i + 0.5, ...) and labels i % classes.
inline std::vector<float> rows(std::uint64_t n, std::uint64_t d) {
  std::vector<float> v;
  for (std::uint64_t i = 0; i < n; ++i) {
    for (std::uint64_t j = 0; j < d; ++j) v.push_back(static_cast<float>(i) + 0.5f * static_cast<float>(j));
  }
  return v;
}

inline std::vector<std::int64_t> labels(std::uint64_t n, std::int64_t classes) {
  std::vector<std::int64_t> v;
  for (std::uint64_t i = 0; i < n; ++i) v.push_back(static_cast<std::int64_t>(i) % classes);
  return v;
}

}  // namespace packtune::testing
