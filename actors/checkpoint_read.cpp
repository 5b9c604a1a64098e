// Reading a checkpoint: everything in the file, sizes and counts included, is checked before
// it is used, because a checkpoint may come from a peer (docs/fuzzing.md).
#include "actors/checkpoint_file.hpp"

#include <cstring>
#include <filesystem>

#include <hdf5.h>

#include "actors/checkpoint_format.hpp"
#include "datasets/hdf5_handle.hpp"
#include "packtune/error.hpp"

namespace packtune::actors {
namespace {

namespace fs = std::filesystem;

using Handle = datasets::Hdf5Handle;

// The longest fixed-length string attribute read: the writer's strings are variable-length,
// and a fixed length comes from the file.
constexpr std::size_t kMaxTextBytes = std::size_t{64} << 20;

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw InputError("checkpoint " + path_ + ": " + what);
  }

  void set_file_bytes(std::uint64_t bytes) { file_bytes_ = bytes; }

  // A checkpoint's datasets are plain: contiguous (or compact) bytes in the file itself. A
  // forged file could otherwise make the reader inflate a compressed dataset without bound,
  // or read another file of this machine (HDF5's external storage, virtual datasets).
  void check_storage(hid_t ds, const std::string& path) const {
    Handle plist(H5Dget_create_plist(ds), H5Pclose);
    if (!plist.ok()) fail("cannot read the storage of " + path);
    const auto layout = H5Pget_layout(plist.get());
    if ((layout != H5D_CONTIGUOUS && layout != H5D_COMPACT) || H5Pget_external_count(plist.get()) != 0 ||
        H5Pget_nfilters(plist.get()) != 0) {
      fail(path + " is not stored as a packtune checkpoint stores its tensors (chunked, filtered or external)");
    }
  }

  bool has_attribute(hid_t where, const char* name) const { return H5Aexists(where, name) > 0; }

  Handle open_attribute(hid_t where, const char* name, const std::string& owner) const {
    if (!has_attribute(where, name)) fail(owner + " has no attribute \"" + name + "\"");
    Handle attr(H5Aopen(where, name, H5P_DEFAULT), H5Aclose);
    if (!attr.ok()) fail("cannot read attribute " + owner + "@" + name + " (corrupt file?)");
    // H5Aread writes every element: an array where one value belongs overflowed the variable
    // it was read into.
    Handle space(H5Aget_space(attr.get()), H5Sclose);
    if (!space.ok() || H5Sget_simple_extent_npoints(space.get()) != 1) {
      fail("attribute " + owner + "@" + name + " is not a single value");
    }
    return attr;
  }

  template <class T>
  T number(hid_t where, const char* name, hid_t memory_type, const std::string& owner = "/") const {
    Handle attr = open_attribute(where, name, owner);
    Handle type(H5Aget_type(attr.get()), H5Tclose);
    const auto cls = H5Tget_class(type.get());
    if (cls != H5T_INTEGER && cls != H5T_FLOAT) fail("attribute " + owner + "@" + name + " is not a number");
    T value{};
    if (H5Aread(attr.get(), memory_type, &value) < 0) fail("cannot read attribute " + owner + "@" + name);
    return value;
  }

  std::string text(hid_t where, const char* name, const std::string& owner = "/") const {
    Handle attr = open_attribute(where, name, owner);
    Handle type(H5Aget_type(attr.get()), H5Tclose);
    if (H5Tget_class(type.get()) != H5T_STRING) fail("attribute " + owner + "@" + name + " is not a string");
    if (H5Tis_variable_str(type.get()) > 0) {
      Handle memory(H5Tcopy(H5T_C_S1), H5Tclose);
      H5Tset_size(memory.get(), H5T_VARIABLE);
      H5Tset_cset(memory.get(), H5Tget_cset(type.get()));
      char* value = nullptr;
      if (H5Aread(attr.get(), memory.get(), &value) < 0 || value == nullptr) {
        fail("cannot read attribute " + owner + "@" + name);
      }
      std::string out(value);
      H5free_memory(value);
      return out;
    }
    // The attribute's bytes are in the file, so it cannot be longer than the file.
    const std::size_t size = H5Tget_size(type.get());
    if (size == 0 || size > kMaxTextBytes || size > file_bytes_) {
      fail("attribute " + owner + "@" + name + " has an impossible size");
    }
    std::string out(size, '\0');
    if (H5Aread(attr.get(), type.get(), out.data()) < 0) fail("cannot read attribute " + owner + "@" + name);
    out.resize(std::strlen(out.c_str()));
    return out;
  }

  nlohmann::json json_text(hid_t where, const char* name) const {
    const auto raw = text(where, name);
    auto parsed = nlohmann::json::parse(raw, nullptr, false);
    if (parsed.is_discarded()) fail("attribute /@" + std::string(name) + " is not valid JSON");
    return parsed;
  }

  // Names of the links in a group, in name order.
  std::vector<std::string> members(hid_t group, const std::string& owner) const {
    H5G_info_t info;
    if (H5Gget_info(group, &info) < 0) fail("cannot list " + owner + " (corrupt file?)");
    // The count and the names' lengths come from the file, and every link and name is stored
    // in it: neither can exceed its size, which bounds the loop and what is allocated.
    if (info.nlinks > file_bytes_) fail(owner + " claims more links than the file could hold (corrupt file?)");
    std::vector<std::string> names;
    for (hsize_t i = 0; i < info.nlinks; ++i) {
      const ssize_t size = H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
      if (size < 0) fail("cannot list " + owner + " (corrupt file?)");
      if (static_cast<std::uint64_t>(size) > file_bytes_) fail(owner + " has a link name longer than the file (corrupt file?)");
      std::string name(static_cast<std::size_t>(size) + 1, '\0');
      H5Lget_name_by_idx(group, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT);
      name.resize(static_cast<std::size_t>(size));
      names.push_back(std::move(name));
    }
    return names;
  }

  Handle group(hid_t parent, const std::string& name, const std::string& path) const {
    if (H5Lexists(parent, name.c_str(), H5P_DEFAULT) <= 0) fail("has no group " + path);
    Handle g(H5Gopen2(parent, name.c_str(), H5P_DEFAULT), H5Gclose);
    if (!g.ok()) fail(path + " is not a group (corrupt file?)");
    return g;
  }

  std::pair<StoredTensor, TensorEntry> dataset(hid_t group, const std::string& name,
                                               const std::string& path) const {
    Handle ds(H5Dopen2(group, name.c_str(), H5P_DEFAULT), H5Dclose);
    if (!ds.ok()) fail(path + " is not a dataset");
    Handle type(H5Dget_type(ds.get()), H5Tclose);
    StoredTensor t;
    t.name = name;
    const auto cls = H5Tget_class(type.get());
    const auto size = H5Tget_size(type.get());
    if (cls == H5T_FLOAT && size == 4) {
      t.type = TensorType::Float32;
    } else if (cls == H5T_INTEGER && size == 8 && H5Tget_sign(type.get()) == H5T_SGN_2) {
      t.type = TensorType::Int64;
    } else {
      fail(path + " is neither float32 nor int64");
    }
    check_storage(ds.get(), path);
    Handle space(H5Dget_space(ds.get()), H5Sclose);
    const auto kind = H5Sget_simple_extent_type(space.get());
    const int rank = H5Sget_simple_extent_ndims(space.get());
    if ((kind != H5S_SIMPLE && kind != H5S_SCALAR) || rank < 0) fail("cannot read the shape of " + path);
    std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
    if (H5Sget_simple_extent_dims(space.get(), dims.data(), nullptr) < 0) fail("cannot read the shape of " + path);
    // The shape comes from the file: its size is checked before anything is allocated for it.
    // A file's own datasets are contiguous and written whole, so a tensor is never larger
    // than the file, and HDF5 must hold exactly its bytes.
    std::uint64_t bytes = element_size(t.type);
    for (auto d : dims) {
      if (d != 0 && bytes > file_bytes_ / d) fail(path + " has a shape larger than the file");
      bytes *= d;
    }
    if (bytes > file_bytes_) fail(path + " has a shape larger than the file");
    const auto stored_bytes = H5Dget_storage_size(ds.get());
    if (stored_bytes != bytes) {
      fail(path + " holds " + std::to_string(stored_bytes) + " bytes, not the " + std::to_string(bytes) +
           " its shape needs (truncated or corrupt file)");
    }
    t.shape.assign(dims.begin(), dims.end());
    t.bytes = TensorBytes(static_cast<std::size_t>(bytes));
    if (t.bytes.size() > 0 &&
        H5Dread(ds.get(), memory_type(t.type), H5S_ALL, H5S_ALL, H5P_DEFAULT, t.bytes.data()) < 0) {
      fail("cannot read " + path + " (truncated or corrupt file)");
    }
    const auto stored = number<std::uint32_t>(ds.get(), "crc32", H5T_NATIVE_UINT32, path);
    const auto crc = crc_of(t.bytes.data(), t.bytes.size());
    if (crc != stored) fail(path + " is corrupt: its CRC32 does not match its contents");
    TensorEntry entry{path, t.type, t.shape, crc};
    return {std::move(t), std::move(entry)};
  }

 private:
  std::string path_;
  std::uint64_t file_bytes_ = 0;
};

}  // namespace

TrialCheckpoint read_checkpoint(const std::string& path) {
  silence_hdf5();
  Reader r(path);
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    r.fail("is a folder; give a checkpoint file in it, such as checkpoints/trial-0-budget-1.h5");
  }
  if (!fs::is_regular_file(path, ec)) r.fail("no such file");
  r.set_file_bytes(fs::file_size(path, ec));
  if (ec) r.fail("cannot read its size (" + ec.message() + ")");
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 <= 0) r.fail("not an HDF5 file");
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) r.fail("cannot open it as HDF5: the file is truncated or corrupt");
  const hid_t root = file.get();
  if (!r.has_attribute(root, "format") || r.text(root, "format") != kCheckpointFormat) {
    r.fail("an HDF5 file, but not a packtune checkpoint (no root attribute format = \"" +
           std::string(kCheckpointFormat) + "\")");
  }
  const auto version = r.number<std::int64_t>(root, "format_version", H5T_NATIVE_INT64);
  if (version != kCheckpointFormatVersion) {
    r.fail("format version " + std::to_string(version) + " is not this packtune's " +
           std::to_string(kCheckpointFormatVersion));
  }
  TrialCheckpoint c;
  c.trial = r.number<std::int64_t>(root, "trial", H5T_NATIVE_INT64);
  c.budget = r.number<double>(root, "budget", H5T_NATIVE_DOUBLE);
  c.step = r.number<std::int64_t>(root, "step", H5T_NATIVE_INT64);
  c.seed = r.number<std::uint64_t>(root, "seed", H5T_NATIVE_UINT64);
  c.config = r.json_text(root, "config");
  c.metrics = r.json_text(root, "metrics");
  c.train_loss_sum = r.number<double>(root, "train_loss_sum", H5T_NATIVE_DOUBLE);
  c.train_loss_count = r.number<std::int64_t>(root, "train_loss_count", H5T_NATIVE_INT64);

  std::vector<TensorEntry> entries;
  {
    Handle model = r.group(root, "model", "/model");
    for (const auto& name : r.members(model.get(), "/model")) {
      auto [tensor, entry] = r.dataset(model.get(), name, "/model/" + name);
      c.model.push_back(std::move(tensor));
      entries.push_back(std::move(entry));
    }
  }
  {
    Handle optimizer = r.group(root, "optimizer", "/optimizer");
    c.optimizer = r.text(optimizer.get(), "name", "/optimizer");
    c.optimizer_steps = r.number<std::int64_t>(optimizer.get(), "steps", H5T_NATIVE_INT64, "/optimizer");
    for (const auto& param : r.members(optimizer.get(), "/optimizer")) {
      const auto where = "/optimizer/" + param;
      Handle group = r.group(optimizer.get(), param, where);
      for (const auto& slot : r.members(group.get(), where)) {
        auto [tensor, entry] = r.dataset(group.get(), slot, where + "/" + slot);
        tensor.name = param + "/" + slot;
        c.optimizer_state.push_back(std::move(tensor));
        entries.push_back(std::move(entry));
      }
    }
  }
  const auto count = r.number<std::int64_t>(root, "tensor_count", H5T_NATIVE_INT64);
  if (count != static_cast<std::int64_t>(entries.size())) {
    r.fail("incomplete: it holds " + std::to_string(entries.size()) + " of its " + std::to_string(count) +
           " tensors (a dataset is missing)");
  }
  const auto checksum = r.number<std::uint32_t>(root, "checksum", H5T_NATIVE_UINT32);
  if (checksum != manifest_checksum(c, entries)) {
    r.fail("corrupt: the root checksum does not match its attributes and tensors");
  }
  return c;
}

}  // namespace packtune::actors
