#pragma once
// What the checkpoint writer (checkpoint_file.cpp) and reader (checkpoint_read.cpp) must agree
// on beyond the layout in docs/checkpoints.md: the root checksum over the metadata and the
// tensor list, each tensor's CRC32, and the HDF5 types a TensorType is stored and read as.
// Internal to packtune_checkpoint_file: it includes HDF5, which checkpoint_file.hpp keeps out
// of its includers.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <hdf5.h>

#include "actors/checkpoint_file.hpp"

namespace packtune::actors {

// A tensor as the root checksum lists it.
struct TensorEntry {
  std::string path;  // "/model/0.weight"
  TensorType type;
  std::vector<std::int64_t> shape;
  std::uint32_t crc;
};

// HDF5 prints its whole error stack to stderr by default; packtune reports one line itself.
void silence_hdf5();

std::uint32_t crc_of(const unsigned char* data, std::size_t size);

// The root checksum covers the metadata and the list of tensors with their own CRC32s, so a
// changed attribute, a dropped dataset or a flipped byte anywhere is detected.
std::uint32_t manifest_checksum(const TrialCheckpoint& c, std::vector<TensorEntry> tensors);

hid_t file_type(TensorType type);
hid_t memory_type(TensorType type);

}  // namespace packtune::actors
