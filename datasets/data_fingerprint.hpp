#pragma once
// A cheap fingerprint of each file an experiment's data block reads, so that `packtune run
// --resume` notices data that changed under the run (docs/faults.md#changed-data). It is the
// file's size, its modification time and a SHA-256 of a sample of its bytes: the first and the
// last 64 KiB and 16 evenly spaced 4 KiB blocks between them, the whole file up to 192 KiB.
// The sample covers a header (a .npy's shape, an HDF5 file's superblock) and keeps the cost
// at 18 reads however large the file; an edit between the sampled blocks still moves the
// modification time, unless the file was replaced by one that kept an old time (cp -p,
// rsync -a) and the same size. Plain C++ and OpenSSL's libcrypto, which HDF5 links already:
// the driver fingerprints without LibTorch.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "datasets/data_source.hpp"

namespace packtune::datasets {

struct FileFingerprint {
  std::string path;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;  // since the epoch
  std::string sample_sha256;  // hex, of the bytes of sampled_ranges(size) in order

  bool operator==(const FileFingerprint& o) const {
    return path == o.path && size == o.size && mtime_ns == o.mtime_ns && sample_sha256 == o.sample_sha256;
  }
  bool operator!=(const FileFingerprint& o) const { return !(*this == o); }
};

struct ByteRange {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

// The parts of a file of `size` bytes its fingerprint reads: ascending and disjoint, at most
// 192 KiB together.
std::vector<ByteRange> sampled_ranges(std::uint64_t size);

// Throws InputError naming the path where the file cannot be opened or read.
FileFingerprint fingerprint_file(const std::string& path);

// The fingerprints of the files of files_read(options) that exist, in its order. A missing
// file has none: data_changes() says it is gone.
std::vector<FileFingerprint> fingerprint_data(const DataOptions& options);

// One phrase per file that differs between the fingerprints a run recorded and those of now,
// starting with its path. A file of at most 192 KiB (hashed whole) whose bytes are the same
// has not changed, whatever its modification time says; a larger one whose time alone differs
// has, since its bytes between the samples are unknown: "/d/x.npy (size 38528 -> 19328 bytes, content, modification time)",
// "/d/t.npy (gone)", "/d/t10k-images-idx3-ubyte.gz (new)". Empty when nothing changed.
std::vector<std::string> data_changes(const std::vector<FileFingerprint>& recorded,
                                      const std::vector<FileFingerprint>& now);

// {"path", "size", "mtime_ns", "sample_sha256"}; a missing key or a wrong type is an
// InputError naming "data_files".
void to_json(nlohmann::json& j, const FileFingerprint& f);
void from_json(const nlohmann::json& j, FileFingerprint& f);

}  // namespace packtune::datasets
