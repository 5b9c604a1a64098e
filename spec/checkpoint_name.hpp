#pragma once
// The names of checkpoint files, `trial-<trial>-budget-<budget>.h5`: what the actor writes and
// the driver's store finds, offers and fetches by. Plain C++, without HDF5, for the driver.
#include <cstdint>
#include <optional>
#include <string>

namespace packtune::spec {

// `DIR/trial-<trial>-budget-<budget>.h5`.
std::string checkpoint_path(const std::string& dir, std::int64_t trial, double budget);

// The trial and budget in a file name checkpoint_path gives (the budget as the name rounds
// it); nullopt for any other name.
struct CheckpointName {
  std::int64_t trial = -1;
  double budget = 0;
};
std::optional<CheckpointName> parse_checkpoint_name(const std::string& file_name);

// What follows a path's last '/' (std::filesystem's filename() of a POSIX path), without
// splitting the path into parts: the driver asks it of every checkpoint an actor reports.
std::string file_name_of(const std::string& path);

}  // namespace packtune::spec
