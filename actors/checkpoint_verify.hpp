#pragma once
// Checkpoints that came from elsewhere, read or copied in a forked child rather than in the
// calling process, which a damaged file must not crash or hang. The child runs
// checkpoint_file.hpp's reader and writer; nothing here includes HDF5.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace packtune::actors {

// read_checkpoint in a child process, for a file that came from elsewhere (a peer's upload):
// Debian's HDF5 (1.10) itself crashes or corrupts its memory on some damaged files
// (docs/fuzzing.md), and then only the child dies. Throws InputError as read_checkpoint does,
// also when the child crashed or ran past `timeout_seconds` (it is then killed; 0: 10 s and
// 1 s more per 50 MB, for HDF5 also loops on some damaged files while the driver waits).
void verify_checkpoint(const std::string& path, double timeout_seconds = 0);

// Population-based training's exploit: `source` (the donor's checkpoint) written to `target`
// as trial `trial`'s, with its seed and config, in a child process as verify_checkpoint reads.
// Throws InputError when `source` cannot be read, Error when `target` cannot be written.
void copy_checkpoint_as(const std::string& source, const std::string& target, std::int64_t trial,
                        std::uint64_t seed, const nlohmann::json& config);

}  // namespace packtune::actors
