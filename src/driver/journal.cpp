#include "driver/journal.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "packtune/error.hpp"

namespace packtune {
namespace {

std::string why(int error) { return std::strerror(error); }

// Writes all of `data` at the end of `fd`; returns 0 or the errno of the failure.
int write_all(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    done += static_cast<std::size_t>(n);
  }
  return 0;
}

}  // namespace

Journal::Journal(std::string path, int fd, long long size) : path_(std::move(path)), fd_(fd), size_(size) {}

Journal::Journal(Journal&& other) noexcept
    : path_(std::move(other.path_)), fd_(other.fd_), size_(other.size_), pending_(std::move(other.pending_)) {
  other.fd_ = -1;
}

Journal& Journal::operator=(Journal&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = other.fd_;
    size_ = other.size_;
    pending_ = std::move(other.pending_);
    other.fd_ = -1;
  }
  return *this;
}

Journal::~Journal() {
  if (fd_ >= 0) ::close(fd_);
}

Journal Journal::create(const std::string& path, const nlohmann::json& header) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(path + ": cannot create the journal (" + why(errno) + ")");
  Journal journal(path, fd, 0);
  journal.append(header);
  journal.commit();
  return journal;
}

Journal Journal::reopen(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) throw Error(path + ": cannot open the journal (" + why(errno) + ")");
  // Everything up to the last newline is whole; what follows was being written at a crash.
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto last = text.rfind('\n');
  const long long whole = last == std::string::npos ? 0 : static_cast<long long>(last) + 1;
  if (whole != static_cast<long long>(text.size()) && ::ftruncate(fd, whole) != 0) {
    const int error = errno;
    ::close(fd);
    throw Error(path + ": cannot cut off its torn last line (" + why(error) + ")");
  }
  if (::lseek(fd, whole, SEEK_SET) < 0) {
    const int error = errno;
    ::close(fd);
    throw Error(path + ": cannot seek (" + why(error) + ")");
  }
  return Journal(path, fd, whole);
}

std::vector<nlohmann::json> Journal::read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot read the journal; is this the results folder of a packtune run?");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<nlohmann::json> entries;
  std::size_t begin = 0;
  int line = 0;
  while (begin < text.size()) {
    const auto end = text.find('\n', begin);
    ++line;
    if (end == std::string::npos) break;  // torn: the crash came mid-write
    try {
      entries.push_back(nlohmann::json::parse(text.begin() + static_cast<long>(begin),
                                              text.begin() + static_cast<long>(end)));
    } catch (const nlohmann::json::exception& e) {
      throw InputError(path + ": line " + std::to_string(line) + " is damaged (" + e.what() +
                       "); the experiment cannot be resumed from it");
    }
    begin = end + 1;
  }
  return entries;
}

nlohmann::json Journal::read_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  if (!in || !std::getline(in, line) || in.eof()) {
    throw InputError(path + ": no journal header; is this the results folder of a packtune run?");
  }
  try {
    return nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": line 1 is damaged (" + e.what() + "); the experiment cannot be resumed from it");
  }
}

void Journal::append(const nlohmann::json& entry) {
  pending_ += entry.dump();
  pending_ += '\n';
}

void Journal::commit() {
  if (pending_.empty()) return;
  int error = write_all(fd_, pending_);
  if (error == 0 && ::fdatasync(fd_) != 0) error = errno;
  if (error != 0) {
    // Whole lines only: a resume after space is freed reads every line that is there.
    if (::ftruncate(fd_, size_) == 0) ::lseek(fd_, size_, SEEK_SET);
    throw Error(path_ + ": cannot write (" + why(error) + "); free space there, then continue with "
                "`packtune run --resume " + path_.substr(0, path_.rfind('/')) + "`");
  }
  size_ += static_cast<long long>(pending_.size());
  pending_.clear();
}

}  // namespace packtune
