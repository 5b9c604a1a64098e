// The checkpoint's types, and writing a file whole or not at all; reading it back, which
// trusts nothing in the file, is checkpoint_read.cpp.
#include "actors/checkpoint_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include <hdf5.h>

#include "actors/checkpoint_format.hpp"
#include "datasets/hdf5_handle.hpp"
#include "packtune/error.hpp"
#include "packtune/test_hold.hpp"

namespace packtune::actors {
namespace {

namespace fs = std::filesystem;

using Handle = datasets::Hdf5Handle;

class Writer {
 public:
  explicit Writer(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("checkpoint " + path_ + ": cannot write " + what + " (disk full or not writable?)");
  }
  void check(herr_t status, const std::string& what) const {
    if (status < 0) fail(what);
  }
  Handle group(hid_t parent, const std::string& name) const {
    Handle g(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    if (!g.ok()) fail("group " + name);
    return g;
  }

  void scalar_attribute(hid_t where, const char* name, hid_t file_type, hid_t memory_type,
                        const void* value) const {
    Handle space(H5Screate(H5S_SCALAR), H5Sclose);
    Handle attr(H5Acreate2(where, name, file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    if (!attr.ok()) fail(std::string("attribute ") + name);
    check(H5Awrite(attr.get(), memory_type, value), std::string("attribute ") + name);
  }
  void attribute(hid_t where, const char* name, std::int64_t value) const {
    scalar_attribute(where, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
  }
  void attribute(hid_t where, const char* name, std::uint64_t value) const {
    scalar_attribute(where, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &value);
  }
  void attribute(hid_t where, const char* name, std::uint32_t value) const {
    scalar_attribute(where, name, H5T_STD_U32LE, H5T_NATIVE_UINT32, &value);
  }
  void attribute(hid_t where, const char* name, double value) const {
    scalar_attribute(where, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
  }
  // Variable-length UTF-8 strings: h5py reads them as str, h5dump prints them.
  void attribute(hid_t where, const char* name, const std::string& value) const {
    Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(type.get(), H5T_VARIABLE);
    H5Tset_cset(type.get(), H5T_CSET_UTF8);
    const char* text = value.c_str();
    scalar_attribute(where, name, type.get(), type.get(), &text);
  }

  TensorEntry dataset(hid_t where, const std::string& group_path, const StoredTensor& t) const {
    if (t.name.empty() || t.name.find('/') != std::string::npos || t.name == "." || t.name == "..") {
      throw Error("checkpoint " + path_ + ": tensor name \"" + t.name + "\" cannot be an HDF5 dataset name");
    }
    if (t.bytes.size() != static_cast<std::size_t>(t.elements()) * element_size(t.type)) {
      throw Error("checkpoint " + path_ + ": tensor " + t.name + " holds " + std::to_string(t.bytes.size()) +
                  " bytes, not what its shape needs");
    }
    std::vector<hsize_t> dims(t.shape.begin(), t.shape.end());
    Handle space(dims.empty() ? H5Screate(H5S_SCALAR)
                              : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr),
                 H5Sclose);
    Handle ds(H5Dcreate2(where, t.name.c_str(), file_type(t.type), space.get(), H5P_DEFAULT, H5P_DEFAULT,
                         H5P_DEFAULT),
              H5Dclose);
    if (!ds.ok()) fail("dataset " + group_path + "/" + t.name);
    if (t.bytes.size() > 0) {
      check(H5Dwrite(ds.get(), memory_type(t.type), H5S_ALL, H5S_ALL, H5P_DEFAULT, t.bytes.data()),
            "dataset " + group_path + "/" + t.name);
    }
    const std::uint32_t crc = crc_of(t.bytes.data(), t.bytes.size());
    attribute(ds.get(), "crc32", crc);
    return {group_path + "/" + t.name, t.type, t.shape, crc};
  }

 private:
  std::string path_;
};

void sync_path(const std::string& path, int flags) {
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

void write_file(const std::string& path, const std::string& shown, const TrialCheckpoint& c) {
  Writer w(shown);
  Handle file(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) w.fail("the file");
  std::vector<TensorEntry> entries;
  {
    Handle model = w.group(file.get(), "model");
    for (const auto& t : c.model) entries.push_back(w.dataset(model.get(), "/model", t));
  }
  {
    Handle optimizer = w.group(file.get(), "optimizer");
    w.attribute(optimizer.get(), "name", c.optimizer);
    w.attribute(optimizer.get(), "steps", c.optimizer_steps);
    std::map<std::string, Handle> params;
    for (const auto& t : c.optimizer_state) {
      const auto slash = t.name.find('/');
      if (slash == std::string::npos) throw Error("optimizer state " + t.name + " is not named <param>/<slot>");
      const auto param = t.name.substr(0, slash);
      auto it = params.find(param);
      if (it == params.end()) it = params.emplace(param, w.group(optimizer.get(), param)).first;
      StoredTensor slot = t;
      slot.name = t.name.substr(slash + 1);
      entries.push_back(w.dataset(it->second.get(), "/optimizer/" + param, slot));
    }
  }
  const hid_t root = file.get();
  w.attribute(root, "format", std::string(kCheckpointFormat));
  w.attribute(root, "format_version", kCheckpointFormatVersion);
  w.attribute(root, "trial", c.trial);
  w.attribute(root, "budget", c.budget);
  w.attribute(root, "step", c.step);
  w.attribute(root, "seed", c.seed);
  w.attribute(root, "config", c.config.dump());
  w.attribute(root, "metrics", c.metrics.dump());
  w.attribute(root, "train_loss_sum", c.train_loss_sum);
  w.attribute(root, "train_loss_count", c.train_loss_count);
  w.attribute(root, "tensor_count", static_cast<std::int64_t>(entries.size()));
  w.attribute(root, "checksum_algorithm", std::string("crc32"));
  w.attribute(root, "checksum", manifest_checksum(c, entries));
  w.check(H5Fflush(root, H5F_SCOPE_GLOBAL), "the file");
  if (!file.close()) w.fail("the file");
}

}  // namespace

const char* to_string(TensorType type) { return type == TensorType::Float32 ? "float32" : "int64"; }
std::size_t element_size(TensorType type) { return type == TensorType::Float32 ? 4 : 8; }

std::int64_t StoredTensor::elements() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

const StoredTensor* TrialCheckpoint::find_model(const std::string& name) const {
  for (const auto& t : model) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const StoredTensor* TrialCheckpoint::find_optimizer(const std::string& param, const std::string& slot) const {
  const auto name = param + "/" + slot;
  for (const auto& t : optimizer_state) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::int64_t TrialCheckpoint::bytes() const {
  std::int64_t n = 0;
  for (const auto& t : model) n += static_cast<std::int64_t>(t.bytes.size());
  for (const auto& t : optimizer_state) n += static_cast<std::int64_t>(t.bytes.size());
  return n;
}

void write_checkpoint(const std::string& path, const TrialCheckpoint& checkpoint, bool durable) {
  silence_hdf5();
  const auto target = fs::path(path);
  const auto temp = target.string() + ".tmp-" + std::to_string(::getpid());
  try {
    write_file(temp, path, checkpoint);
    test_hold("actor.checkpoint_tmp");
  } catch (...) {
    std::error_code ec;
    fs::remove(temp, ec);
    throw;
  }
  // The data must be on disk before the rename makes it visible, and the rename itself
  // before anyone is told the checkpoint exists.
  if (durable) sync_path(temp, O_RDONLY);
  std::error_code ec;
  fs::rename(temp, target, ec);
  if (ec) {
    fs::remove(temp, ec);
    throw Error("checkpoint " + path + ": cannot rename the temporary file into place (" + ec.message() + ")");
  }
  if (durable) sync_path(target.parent_path().empty() ? "." : target.parent_path().string(), O_RDONLY | O_DIRECTORY);
}

}  // namespace packtune::actors
