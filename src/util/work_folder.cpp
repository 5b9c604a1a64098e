#include "util/work_folder.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "packtune/error.hpp"

namespace packtune::util {

std::filesystem::path temp_folder() {
  std::error_code ec;
  auto base = std::filesystem::temp_directory_path(ec);
  return ec ? std::filesystem::path("/tmp") : base;
}

namespace {

// Whether `name` is packtune-OWNER-PID for one of `owners`; its pid then goes to `pid`.
bool work_folder_name(const std::string& name, const std::vector<std::string>& owners, pid_t& pid) {
  const std::string prefix = "packtune-";
  if (name.rfind(prefix, 0) != 0) return false;
  for (const auto& owner : owners) {
    const auto digits = prefix.size() + owner.size() + 1;
    if (name.compare(prefix.size(), owner.size(), owner) != 0 || name.size() <= digits || name[digits - 1] != '-' ||
        name.size() - digits > 9 || name.find_first_not_of("0123456789", digits) != std::string::npos) {
      continue;
    }
    pid = static_cast<pid_t>(std::stol(name.substr(digits)));
    return true;
  }
  return false;
}

// A process killed hard (Ctrl-C while a model plugin is described, -9, the OOM killer) leaves
// its work folder behind: the next fresh_work_dir removes those of processes that are gone. A
// pid that is alive, or a folder of another user (whose process may live in another pid
// namespace sharing the temporary folder), is left alone, as is anything not a folder.
void remove_folders_of_gone_processes(const std::string& owner) {
  namespace fs = std::filesystem;
  std::vector<std::string> owners = {"actor", "node", "relay", "driver", "describe"};
  if (std::find(owners.begin(), owners.end(), owner) == owners.end()) owners.push_back(owner);
  std::error_code ec;
  fs::directory_iterator it(temp_folder(), ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    pid_t pid = 0;
    if (!work_folder_name(it->path().filename().string(), owners, pid) || pid <= 0 || pid == ::getpid()) continue;
    struct stat st {};
    if (::lstat(it->path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code removed;
    fs::remove_all(it->path(), removed);
  }
}

}  // namespace

std::string fresh_work_dir(const std::string& owner) {
  remove_folders_of_gone_processes(owner);
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
