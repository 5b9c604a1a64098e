#include "util/work_folder.hpp"

#include <unistd.h>

#include "packtune/error.hpp"

namespace packtune::util {

std::filesystem::path temp_folder() {
  std::error_code ec;
  auto base = std::filesystem::temp_directory_path(ec);
  return ec ? std::filesystem::path("/tmp") : base;
}

std::string fresh_work_dir(const std::string& owner) {
  std::error_code ec;
  const auto dir = temp_folder() / ("packtune-" + owner + "-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("cannot create the work folder " + dir.string() + ": " + ec.message());
  return dir.string();
}

}  // namespace packtune::util
