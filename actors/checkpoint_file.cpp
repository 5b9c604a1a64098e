#include "actors/checkpoint_file.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <functional>
#include <cmath>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>

#include <hdf5.h>

#include "datasets/hdf5_handle.hpp"
#include "packtune/error.hpp"
#include "packtune/test_hold.hpp"

namespace packtune::actors {
namespace {

namespace fs = std::filesystem;

using Handle = datasets::Hdf5Handle;

// in_child's child exits with this when the file was refused (an InputError, its message on
// the pipe); 0 is success, anything else a crash.
constexpr int kVerifyRefused = 3;
constexpr int kChildFailed = 4;  // in_child: the work failed otherwise than on the file

// The longest fixed-length string attribute read: the writer's strings are variable-length,
// and a fixed length comes from the file.
constexpr std::size_t kMaxTextBytes = std::size_t{64} << 20;

// HDF5 prints its whole error stack to stderr by default; packtune reports one line itself.
void silence_hdf5() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

std::uint32_t crc_of(const unsigned char* data, std::size_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths; feed large buffers in pieces.
  constexpr std::size_t piece = std::size_t{1} << 30;
  for (std::size_t done = 0; done < size; done += piece) {
    crc = crc32(crc, data + done, static_cast<uInt>(std::min(piece, size - done)));
  }
  return static_cast<std::uint32_t>(crc);
}

std::string hex_bits(double value) {
  std::uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  char text[32];
  std::snprintf(text, sizeof text, "%016" PRIx64, bits);
  return text;
}

struct TensorEntry {
  std::string path;  // "/model/0.weight"
  TensorType type;
  std::vector<std::int64_t> shape;
  std::uint32_t crc;
};

// The root checksum covers the metadata and the list of tensors with their own CRC32s, so a
// changed attribute, a dropped dataset or a flipped byte anywhere is detected.
std::uint32_t manifest_checksum(const TrialCheckpoint& c, std::vector<TensorEntry> tensors) {
  std::sort(tensors.begin(), tensors.end(),
            [](const TensorEntry& a, const TensorEntry& b) { return a.path < b.path; });
  std::ostringstream m;
  m << kCheckpointFormat << " " << kCheckpointFormatVersion << "\ntrial " << c.trial << "\nbudget "
    << hex_bits(c.budget) << "\nstep " << c.step << "\nseed " << c.seed << "\nconfig "
    << c.config.dump() << "\nmetrics " << c.metrics.dump() << "\noptimizer " << c.optimizer
    << " " << c.optimizer_steps << "\ntrain_loss " << hex_bits(c.train_loss_sum) << " "
    << c.train_loss_count << "\n";
  for (const auto& t : tensors) {
    m << t.path << " " << to_string(t.type);
    for (auto d : t.shape) m << " " << d;
    m << " " << t.crc << "\n";
  }
  const auto text = m.str();
  return crc_of(reinterpret_cast<const unsigned char*>(text.data()), text.size());
}

hid_t file_type(TensorType type) { return type == TensorType::Float32 ? H5T_IEEE_F32LE : H5T_STD_I64LE; }
hid_t memory_type(TensorType type) { return type == TensorType::Float32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_INT64; }

// --- writing ---------------------------------------------------------------------------------

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

// --- reading ---------------------------------------------------------------------------------

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

const char* to_string(TensorType type) { return type == TensorType::Float32 ? "float32" : "int64"; }
std::size_t element_size(TensorType type) { return type == TensorType::Float32 ? 4 : 8; }

std::int64_t StoredTensor::elements() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

const std::vector<std::string>& optimizer_slots(const std::string& optimizer) {
  static const std::vector<std::string> sgd{"momentum_buffer"};
  static const std::vector<std::string> adam{"exp_avg", "exp_avg_sq"};
  if (optimizer == "sgd") return sgd;
  if (optimizer == "adam" || optimizer == "adamw") return adam;
  throw InputError("optimizer: unknown optimizer \"" + optimizer + "\"; expected sgd, adam or adamw");
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

TrialCheckpoint read_checkpoint(const std::string& path) {
  silence_hdf5();
  Reader r(path);
  std::error_code ec;
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

namespace {

// Runs `work` on `path` in a forked child: HDF5 never runs in the calling process (the
// driver's threads fork, and a child forked while another thread held HDF5's lock would
// inherit it locked). `doing` names the work in messages ("reading it"). The child's
// InputError comes back as one, any other error as Error; a crash, or a child still running
// after `timeout_seconds` (then killed), is an InputError blaming the file.
void in_child(const std::string& path, const std::string& doing, double timeout_seconds,
              const std::function<void()>& work) {
  if (timeout_seconds <= 0) {
    std::error_code ec;
    const auto bytes = fs::file_size(path, ec);
    timeout_seconds = 10 + (ec ? 0.0 : static_cast<double>(bytes) / 50e6);
  }
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw Error("checkpoint " + path + ": cannot start " + doing + " (pipe: " + std::strerror(errno) + ")");
  const pid_t child = ::fork();
  if (child < 0) {
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    throw Error("checkpoint " + path + ": cannot start " + doing + " (fork: " + std::strerror(errno) + ")");
  }
  if (child == 0) {
    // Only this thread exists here; nothing is flushed or destroyed on the way out (_exit).
    ::close(pipe_fds[0]);
    std::string message;
    int code = 0;
    try {
      work();
    } catch (const InputError& e) {
      message = e.what();
      code = kVerifyRefused;
    } catch (const std::exception& e) {
      message = e.what();
      code = kChildFailed;
    }
    for (std::size_t done = 0; done < message.size();) {
      const auto n = ::write(pipe_fds[1], message.data() + done, message.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    ::_exit(code);
  }
  ::close(pipe_fds[1]);
  std::string message;
  bool timed_out = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd item{pipe_fds[0], POLLIN, 0};
    const int ready = left.count() > 0 ? ::poll(&item, 1, static_cast<int>(std::min<long long>(left.count(), 1000))) : 0;
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      if (left.count() > 0) continue;
      timed_out = true;
      ::kill(child, SIGKILL);
      break;
    }
    char buffer[4096];
    const auto n = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    message.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out) {
    throw InputError("checkpoint " + path + ": " + doing + " took more than " + std::to_string(static_cast<int>(timeout_seconds)) +
                     " s (a damaged or forged file?)");
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  if (WIFEXITED(status) && WEXITSTATUS(status) == kVerifyRefused && !message.empty()) throw InputError(message);
  if (WIFEXITED(status) && WEXITSTATUS(status) == kChildFailed && !message.empty()) throw Error(message);
  throw InputError("checkpoint " + path + ": the HDF5 library crashed " + doing + " (" +
                   (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                        : "exit code " + std::to_string(WEXITSTATUS(status))) +
                   "): a damaged or forged file");
}

}  // namespace

void verify_checkpoint(const std::string& path, double timeout_seconds) {
  in_child(path, "reading it", timeout_seconds, [&] { read_checkpoint(path); });
}

void copy_checkpoint_as(const std::string& source, const std::string& target, std::int64_t trial,
                        std::uint64_t seed, const nlohmann::json& config) {
  in_child(source, "copying it", 0, [&] {
    auto checkpoint = read_checkpoint(source);
    checkpoint.trial = trial;
    checkpoint.seed = seed;
    checkpoint.config = config;
    write_checkpoint(target, checkpoint);
  });
}

std::string checkpoint_path(const std::string& dir, std::int64_t trial, double budget) {
  char name[96];
  std::snprintf(name, sizeof name, "trial-%" PRId64 "-budget-%g.h5", trial, budget);
  return (fs::path(dir) / name).string();
}

std::optional<CheckpointName> parse_checkpoint_name(const std::string& file_name) {
  // Split at the literal parts first: scanf's %lf takes the "4." of "trial-0-budget-4.h5" (a
  // whole budget, as %g writes it) and then misses ".h5".
  static const std::string prefix = "trial-", middle = "-budget-", suffix = ".h5";
  if (file_name.size() <= prefix.size() + middle.size() + suffix.size() ||
      file_name.compare(0, prefix.size(), prefix) != 0 ||
      file_name.compare(file_name.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return std::nullopt;
  }
  const auto at = file_name.find(middle, prefix.size());
  if (at == std::string::npos) return std::nullopt;
  const std::string trial = file_name.substr(prefix.size(), at - prefix.size());
  const std::string budget = file_name.substr(at + middle.size(), file_name.size() - suffix.size() - at - middle.size());
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (trial.empty() || trial.size() > 18 || !std::all_of(trial.begin(), trial.end(), digit) || budget.empty() ||
      !digit(budget[0])) {
    return std::nullopt;
  }
  CheckpointName parsed;
  parsed.trial = std::stoll(trial);
  char* end = nullptr;
  parsed.budget = std::strtod(budget.c_str(), &end);
  if (end != budget.c_str() + budget.size() || !std::isfinite(parsed.budget)) return std::nullopt;
  return parsed;
}

}  // namespace packtune::actors
