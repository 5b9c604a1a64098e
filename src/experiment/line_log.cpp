#include "experiment/line_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "packtune/error.hpp"

namespace packtune {
namespace {

[[noreturn]] void fail(const std::string& path, const char* what, int error, const std::string& advice) {
  throw Error(path + ": " + what + " (" + std::strerror(error) + ")" + (advice.empty() ? "" : "; " + advice));
}

}  // namespace

// One thread that runs fdatasync on request; the log's thread asks and later collects.
class LineLog::Syncer {
 public:
  Syncer() : thread_([this] { run(); }) {}
  ~Syncer() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  void start(int fd) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      fd_ = fd;
      done_ = false;
    }
    wake_.notify_all();
  }
  bool done() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return done_;
  }
  // Waits until the sync asked for is done; its errno, or 0.
  int wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    wake_.wait(lock, [this] { return done_; });
    return error_;
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [this] { return stop_ || fd_ >= 0; });
      if (fd_ < 0) return;
      const int fd = fd_;
      lock.unlock();
      const int error = ::fdatasync(fd) == 0 ? 0 : errno;
      lock.lock();
      fd_ = -1;
      error_ = error;
      done_ = true;
      wake_.notify_all();
    }
  }

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  int fd_ = -1;  // a sync asked for and not begun
  bool done_ = true;
  int error_ = 0;
  bool stop_ = false;
  std::thread thread_;  // last: it starts in the constructor
};

LineLog::LineLog(std::string path, int fd, long long size, std::string advice)
    : path_(std::move(path)), fd_(fd), size_(size), advice_(std::move(advice)) {}

LineLog::LineLog(LineLog&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(other.fd_),
      size_(other.size_),
      pending_(std::move(other.pending_)),
      inflight_(std::move(other.inflight_)),
      advice_(std::move(other.advice_)),
      syncer_(std::move(other.syncer_)) {
  other.fd_ = -1;
}

LineLog& LineLog::operator=(LineLog&& other) noexcept {
  if (this != &other) {
    syncer_.reset();  // a sync in flight on the fd about to close ends first
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    size_ = other.size_;
    pending_ = std::move(other.pending_);
    inflight_ = std::move(other.inflight_);
    advice_ = std::move(other.advice_);
    syncer_ = std::move(other.syncer_);
    other.fd_ = -1;
  }
  return *this;
}

LineLog::~LineLog() {
  syncer_.reset();  // waits for a sync in flight
  if (fd_ >= 0) ::close(fd_);
}

LineLog LineLog::create(const std::string& path, std::string advice) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, "cannot create", errno, "");
  return LineLog(path, fd, 0, std::move(advice));
}

LineLog LineLog::reopen(const std::string& path, long long whole_bytes, std::string advice) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
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

void LineLog::append_text(std::string_view line) {
  pending_ += line;
  pending_ += '\n';
}

bool LineLog::unlinked() const {
  struct stat st {};
  return fd_ >= 0 && ::fstat(fd_, &st) == 0 && st.st_nlink == 0;
}

int LineLog::write_all(const std::string& text) const {
  for (std::size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n >= 0) {
      done += static_cast<std::size_t>(n);
    } else if (errno != EINTR) {
      return errno;
    }
  }
  return 0;
}

void LineLog::fail_back(const char* what, int error) {
  // If even the cut fails, a resume cuts the torn line off when it reopens the file.
  if (::ftruncate(fd_, size_) == 0) ::lseek(fd_, size_, SEEK_SET);
  fail(path_, what, error, advice_);
}

void LineLog::flush(bool sync) {
  settle();
  if (pending_.empty()) return;
  int error = write_all(pending_);
  if (error == 0 && sync && ::fdatasync(fd_) != 0) error = errno;
  // The lines stay pending: a later flush (the driver's last, as it stops) tries them again.
  if (error != 0) fail_back("cannot write", error);
  size_ += static_cast<long long>(pending_.size());
  pending_.clear();
}

void LineLog::flush_async() {
  settle();
  if (pending_.empty()) return;
  // Before anything is written: a thread that cannot start leaves the lines pending.
  if (!syncer_) syncer_ = std::make_unique<Syncer>();
  if (const int error = write_all(pending_); error != 0) fail_back("cannot write", error);
  inflight_.swap(pending_);
  pending_.clear();
  syncer_->start(fd_);
}

bool LineLog::synced() const { return !syncing() || syncer_->done(); }

void LineLog::settle() {
  if (!syncing()) return;
  const int error = syncer_->wait();
  if (error != 0) {
    pending_.insert(0, inflight_);
    inflight_.clear();
    fail_back("cannot write", error);
  }
  size_ += static_cast<long long>(inflight_.size());
  inflight_.clear();
}

std::string LineLog::take_pending() {
  std::string out;
  out.swap(pending_);
  return out;
}

void LineLog::write_now(std::string lines) {
  settle();
  if (lines.empty()) return;
  if (const int error = write_all(lines); error != 0) {
    pending_.insert(0, lines);
    fail_back("cannot write", error);
  }
  size_ += static_cast<long long>(lines.size());
}

}  // namespace packtune
