#pragma once
// One trial's checkpoint as an HDF5 file (layout in docs/checkpoints.md). Plain C++ over
// HDF5's C API, without LibTorch, so `packtune inspect` and the driver can open checkpoints
// without compiling the training engine; actors/checkpoint_tensors.hpp converts to tensors.
// A file from elsewhere is read in a child process (checkpoint_verify.hpp); the files' names
// are checkpoint_name.hpp's.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace packtune::actors {

constexpr std::int64_t kCheckpointFormatVersion = 1;
// The root attribute `format` of every packtune checkpoint; other HDF5 files lack it.
constexpr const char* kCheckpointFormat = "packtune-checkpoint";

enum class TensorType { Float32, Int64 };
const char* to_string(TensorType type);
std::size_t element_size(TensorType type);

// Raw tensor bytes in native (little-endian) order. Allocated without zero-filling: a
// 100 MB model is copied into it once, never cleared first.
class TensorBytes {
 public:
  TensorBytes() = default;
  explicit TensorBytes(std::size_t size) : data_(new unsigned char[size]), size_(size) {}
  unsigned char* data() { return data_.get(); }
  const unsigned char* data() const { return data_.get(); }
  std::size_t size() const { return size_; }

 private:
  std::shared_ptr<unsigned char[]> data_;
  std::size_t size_ = 0;
};

struct StoredTensor {
  std::string name;  // a state-dict name ("0.weight"), or "<param>/<slot>" for optimizer state
  TensorType type = TensorType::Float32;
  std::vector<std::int64_t> shape;
  TensorBytes bytes;

  std::int64_t elements() const;
};

struct TrialCheckpoint {
  std::int64_t trial = -1;
  double budget = 0;            // the budget reached, in the experiment's unit
  std::int64_t step = 0;        // training steps taken
  std::uint64_t seed = 0;       // the trial's seed: with `step`, its whole RNG state
  nlohmann::json config = nlohmann::json::object();  // the trial's hyper-parameters
  nlohmann::json metrics = nlohmann::json::array();  // every report so far, oldest first
  std::string optimizer;        // sgd | adam | adamw
  std::int64_t optimizer_steps = 0;  // the optimizer's step count (Adam's bias correction)
  double train_loss_sum = 0;    // train_loss accumulated since the last report
  std::int64_t train_loss_count = 0;
  std::vector<StoredTensor> model;      // /model/<name>: parameters and buffers
  std::vector<StoredTensor> optimizer_state;  // /optimizer/<param>/<slot>

  const StoredTensor* find_model(const std::string& name) const;
  const StoredTensor* find_optimizer(const std::string& param, const std::string& slot) const;
  std::int64_t bytes() const;  // tensor bytes in all
};

// Writes `checkpoint` to `path` atomically: a temporary file next to it, flushed and synced,
// then renamed over `path`. A crash leaves either the old file or the new one, never half.
// `durable` false skips the syncs, for a staging copy that is sent on and deleted (the
// receiving store syncs what it keeps); the rename still makes it appear whole.
void write_checkpoint(const std::string& path, const TrialCheckpoint& checkpoint, bool durable = true);

// Reads and verifies a checkpoint: every tensor's CRC32 and the root checksum over the
// metadata and the tensor list. Throws InputError naming `path` and what is wrong for a
// missing, non-HDF5, foreign, truncated or corrupt file; it never returns a damaged one.
TrialCheckpoint read_checkpoint(const std::string& path);

}  // namespace packtune::actors
