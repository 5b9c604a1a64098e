// A dataset of a user's HDF5 file, read with HDF5's C API as the checkpoint files are
// (actors/checkpoint_read.cpp). HDF5 converts the file's byte order to the machine's on read, so
// big-endian datasets are read as they are; chunked and compressed datasets too (h5py's
// compression="gzip"), since the data is the user's own, not something received.
#include <filesystem>

#include <hdf5.h>

#include "datasets/array_file.hpp"
#include "datasets/hdf5_handle.hpp"
#include "packtune/error.hpp"

namespace packtune::datasets {
namespace {

using Handle = Hdf5Handle;

hid_t memory_type(DType dtype) {
  switch (dtype) {
    case DType::UInt8: return H5T_NATIVE_UINT8;
    case DType::Int8: return H5T_NATIVE_INT8;
    case DType::UInt16: return H5T_NATIVE_UINT16;
    case DType::Int16: return H5T_NATIVE_INT16;
    case DType::UInt32: return H5T_NATIVE_UINT32;
    case DType::Int32: return H5T_NATIVE_INT32;
    case DType::UInt64: return H5T_NATIVE_UINT64;
    case DType::Int64: return H5T_NATIVE_INT64;
    case DType::Float32: return H5T_NATIVE_FLOAT;
    case DType::Float64: return H5T_NATIVE_DOUBLE;
    case DType::Other: break;
  }
  return H5T_NATIVE_UINT8;
}

std::string class_text(H5T_class_t cls) {
  switch (cls) {
    case H5T_STRING: return "string";
    case H5T_COMPOUND: return "compound";
    case H5T_ENUM: return "enum";
    case H5T_ARRAY: return "array";
    case H5T_BITFIELD: return "bitfield";
    case H5T_OPAQUE: return "opaque";
    case H5T_REFERENCE: return "reference";
    case H5T_VLEN: return "variable-length";
    default: return "unknown";
  }
}

class Hdf5Reader : public ArrayReader {
 public:
  Hdf5Reader(const std::string& file_key, const std::string& dataset_key, const std::string& path,
             const std::string& dataset)
      : file_(-1, H5Fclose), dataset_(-1, H5Dclose) {
    // HDF5 prints its whole error stack to stderr by default; packtune reports one line itself.
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    info_.where = file_key + ": " + path;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) fail("file not found");
    if (std::filesystem::file_size(path, ec) == 0 && !ec) fail("empty file (0 bytes)");
    if (H5Fis_hdf5(path.c_str()) <= 0) fail("not an HDF5 file");
    file_ = Handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
    if (!file_.ok()) fail("cannot open the HDF5 file");
    info_.where = dataset_key + ": " + path + " dataset \"" + dataset + "\"";
    if (dataset.empty() || H5Lexists(file_.get(), dataset.c_str(), H5P_DEFAULT) <= 0) fail("no such dataset");
    dataset_ = Handle(H5Dopen2(file_.get(), dataset.c_str(), H5P_DEFAULT), H5Dclose);
    if (!dataset_.ok()) fail("not a dataset (a group?)");
    read_type();
    Handle space(H5Dget_space(dataset_.get()), H5Sclose);
    const int rank = space.ok() ? H5Sget_simple_extent_ndims(space.get()) : -1;
    if (rank < 0) fail("cannot read the dataset's shape");
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
    H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr);
    info_.shape.assign(dims.begin(), dims.end());
  }

  void read_rows(std::uint64_t begin, std::uint64_t end, void* out) override {
    Handle file_space(H5Dget_space(dataset_.get()), H5Sclose);
    std::vector<hsize_t> start(info_.shape.size(), 0), count(info_.shape.begin(), info_.shape.end());
    start[0] = begin;
    count[0] = end - begin;
    Handle memory_space(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose);
    if (!file_space.ok() || !memory_space.ok() ||
        H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr) < 0 ||
        H5Dread(dataset_.get(), memory_type(info_.dtype), memory_space.get(), file_space.get(), H5P_DEFAULT, out) < 0) {
      const std::string rows = "cannot read rows " + std::to_string(begin) + " to " + std::to_string(end);
      const auto missing = missing_filters();
      if (!missing.empty()) {
        fail(rows + ": the dataset is compressed with " + missing + ", which this HDF5 library (" + hdf5_version() +
             ") does not have; rewrite it with gzip (h5py: compression=\"gzip\") or uncompressed, or install the "
             "filter's plugin where HDF5_PLUGIN_PATH points");
      }
      fail(rows + " (corrupt file?)");
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw InputError(info_.where + ": " + what); }

  // The filters of the dataset's pipeline that this HDF5 library can neither find built in nor
  // load as a plugin ("HDF5 filter lzf (id 32000)"); empty when there are none. h5py's lzf, for
  // one, is h5py's own: a file it wrote reads in h5py and nowhere else without the plugin.
  std::string missing_filters() const {
    Handle plist(H5Dget_create_plist(dataset_.get()), H5Pclose);
    if (!plist.ok()) return "";
    const int count = H5Pget_nfilters(plist.get());
    std::string missing;
    for (int i = 0; i < count; ++i) {
      unsigned flags = 0, filter_config = 0;
      std::size_t values = 0;
      char name[256] = {0};
      const H5Z_filter_t id = H5Pget_filter2(plist.get(), static_cast<unsigned>(i), &flags, &values, nullptr,
                                             sizeof name, name, &filter_config);
      if (id < 0 || H5Zfilter_avail(id) > 0) continue;
      // The name is the file's: a control character in it would break the one-line message.
      for (char* c = name; *c; ++c) {
        if (static_cast<unsigned char>(*c) < 0x20 || *c == 0x7f) *c = '?';
      }
      missing += std::string(missing.empty() ? "" : " and ") + "HDF5 filter " + (name[0] ? name : "without a name") +
                 " (id " + std::to_string(id) + ")";
    }
    return missing;
  }

  static std::string hdf5_version() {
    unsigned major = 0, minor = 0, release = 0;
    H5get_libversion(&major, &minor, &release);
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
  }

  void read_type() {
    Handle type(H5Dget_type(dataset_.get()), H5Tclose);
    if (!type.ok()) fail("cannot read the dataset's type");
    const auto cls = H5Tget_class(type.get());
    const auto size = H5Tget_size(type.get());
    if (cls == H5T_INTEGER) {
      const bool sign = H5Tget_sign(type.get()) == H5T_SGN_2;
      info_.dtype_text = (sign ? "int" : "uint") + std::to_string(size * 8);
      switch (size) {
        case 1: info_.dtype = sign ? DType::Int8 : DType::UInt8; break;
        case 2: info_.dtype = sign ? DType::Int16 : DType::UInt16; break;
        case 4: info_.dtype = sign ? DType::Int32 : DType::UInt32; break;
        case 8: info_.dtype = sign ? DType::Int64 : DType::UInt64; break;
        default: break;
      }
    } else if (cls == H5T_FLOAT) {
      info_.dtype_text = "float" + std::to_string(size * 8);
      info_.dtype = size == 4 ? DType::Float32 : size == 8 ? DType::Float64 : DType::Other;
    } else {
      info_.dtype_text = class_text(cls);
    }
  }

  Handle file_;
  Handle dataset_;
};

}  // namespace

std::unique_ptr<ArrayReader> open_hdf5(const std::string& file_key, const std::string& dataset_key,
                                       const std::string& path, const std::string& dataset) {
  return std::make_unique<Hdf5Reader>(file_key, dataset_key, path, dataset);
}

}  // namespace packtune::datasets
