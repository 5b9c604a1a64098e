#include "spec/checkpoint_name.hpp"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

namespace packtune::spec {

namespace fs = std::filesystem;

std::string checkpoint_path(const std::string& dir, std::int64_t trial, double budget) {
  char name[96];
  std::snprintf(name, sizeof name, "trial-%" PRId64 "-budget-%g.h5", trial, budget);
  return (fs::path(dir) / name).string();
}

std::string file_name_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
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

}  // namespace packtune::spec
