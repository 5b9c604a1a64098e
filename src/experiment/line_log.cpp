#include "experiment/line_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "packtune/error.hpp"

namespace packtune {
namespace {

[[noreturn]] void fail(const std::string& path, const char* what, int error, const std::string& advice) {
  if (error == ELOOP) {
    throw InputError(path + ": is a link; a run writes its own files, never through a link (which may be another "
                     "run's): put the file itself there");
  }
  throw Error(path + ": " + what + " (" + std::strerror(error) + ")" + (advice.empty() ? "" : "; " + advice));
}

}  // namespace

LineLog::LineLog(std::string path, int fd, long long size, std::string advice)
    : path_(std::move(path)), fd_(fd), size_(size), advice_(std::move(advice)) {}

LineLog::LineLog(LineLog&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(other.fd_),
      size_(other.size_),
      pending_(std::move(other.pending_)),
      advice_(std::move(other.advice_)) {
  other.fd_ = -1;
}

LineLog& LineLog::operator=(LineLog&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    size_ = other.size_;
    pending_ = std::move(other.pending_);
    advice_ = std::move(other.advice_);
    other.fd_ = -1;
  }
  return *this;
}

LineLog::~LineLog() {
  if (fd_ >= 0) ::close(fd_);
}

LineLog LineLog::create(const std::string& path, std::string advice) {
  // Never through a link: a results folder's link to another run's file would change that run.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) fail(path, "cannot create", errno, "");
  return LineLog(path, fd, 0, std::move(advice));
}

LineLog LineLog::reopen(const std::string& path, long long whole_bytes, std::string advice) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) fail(path, "cannot open for writing", errno, "");
  if (::ftruncate(fd, whole_bytes) != 0 || ::lseek(fd, whole_bytes, SEEK_SET) < 0) {
    const int error = errno;
    ::close(fd);
    fail(path, "cannot cut off its torn last line", error, "");
  }
  return LineLog(path, fd, whole_bytes, std::move(advice));
}

void LineLog::append(const nlohmann::json& line) {
  pending_ += line.dump();
  pending_ += '\n';
}

void LineLog::append_text(std::string_view line, std::string_view more) {
  pending_ += line;
  pending_ += more;
  pending_ += '\n';
}

bool LineLog::unlinked() const {
  struct stat st {};
  return fd_ >= 0 && ::fstat(fd_, &st) == 0 && st.st_nlink == 0;
}

void LineLog::flush(bool sync) {
  if (pending_.empty()) return;
  int error = 0;
  for (std::size_t done = 0; done < pending_.size() && error == 0;) {
    const ssize_t n = ::write(fd_, pending_.data() + done, pending_.size() - done);
    if (n >= 0) {
      done += static_cast<std::size_t>(n);
    } else if (errno != EINTR) {
      error = errno;
    }
  }
  if (error == 0 && sync && ::fdatasync(fd_) != 0) error = errno;
  if (error != 0) {
    // If even the cut fails, a resume cuts the torn line off when it reopens the file.
    // The lines stay pending: a later flush (the driver's last, as it stops) tries them again.
    if (::ftruncate(fd_, size_) == 0) ::lseek(fd_, size_, SEEK_SET);
    fail(path_, "cannot write", error, advice_);
  }
  size_ += static_cast<long long>(pending_.size());
  pending_.clear();
}

}  // namespace packtune
