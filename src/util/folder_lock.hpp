#pragma once
// One driver per results folder: a second one (a --resume while the run still goes on) would
// cut the journal and results.jsonl the first is writing. The lock is flock(2) on the folder
// itself: the kernel drops it when the process ends, however it ends, and actors do not
// inherit it (close-on-exec).
#include <string>

namespace packtune::util {

class FolderLock {
 public:
  // Locks `dir`; throws InputError when another process holds it (another driver runs this
  // experiment), Error when the folder cannot be opened or locked.
  explicit FolderLock(const std::string& dir);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

  // Whether `dir` is still the folder this locked: not deleted, not moved away and replaced.
  bool still_at(const std::string& dir) const;
  // The locked folder itself, as a path (/proc/self/fd/N), whatever its own path becomes: a
  // file written through it lands in this folder, never in one that replaced it, and a
  // deleted folder takes no new file.
  std::string held_path() const;

 private:
  int fd_;
};

}  // namespace packtune::util
