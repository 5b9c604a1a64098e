#include "util/work_folder.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "packtune/error.hpp"

namespace packtune::util {

std::filesystem::path temp_folder() {
  std::error_code ec;
  auto base = std::filesystem::temp_directory_path(ec);
  return ec ? std::filesystem::path("/tmp") : base;
}

std::string fresh_work_dir(const std::string& owner) {
  const auto dir = temp_folder() / ("packtune-" + owner + "-" + std::to_string(getpid()));
  if (::mkdir(dir.c_str(), 0700) == 0) return dir.string();
  if (errno != EEXIST) throw Error("cannot create the work folder " + dir.string() + ": " + std::strerror(errno));
  // The name is predictable and the temporary folder shared: what another user put there (a
  // link to a folder of the user's, say) must not become the folder actors write into and
  // their owner removes. Our own folder of an earlier process with this pid is kept.
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
    throw Error("cannot create the work folder " + dir.string() + ": something else is there (not a folder of " +
                "this user's); remove it");
  }
  return dir.string();
}

}  // namespace packtune::util
