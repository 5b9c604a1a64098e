#include "util/folder_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "packtune/error.hpp"

namespace packtune::util {

FolderLock::FolderLock(const std::string& dir) : fd_(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
  if (fd_ < 0) throw Error("cannot open the results folder " + dir + ": " + std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) == 0) return;
  const int error = errno;
  ::close(fd_);
  if (error == EWOULDBLOCK) {
    throw InputError(dir + ": another packtune driver is running this experiment; wait for it to end, or stop it "
                     "(Ctrl-C) and then run `packtune run --resume " + dir + "`");
  }
  throw Error("cannot lock the results folder " + dir + ": " + std::strerror(error));
}

FolderLock::~FolderLock() { ::close(fd_); }

bool FolderLock::still_at(const std::string& dir) const {
  struct stat locked {}, now {};
  if (::fstat(fd_, &locked) != 0 || locked.st_nlink == 0) return false;
  return ::stat(dir.c_str(), &now) == 0 && now.st_dev == locked.st_dev && now.st_ino == locked.st_ino;
}

std::string FolderLock::held_path() const { return "/proc/self/fd/" + std::to_string(fd_); }

}  // namespace packtune::util
