#include "datasets/data_fingerprint.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include "packtune/error.hpp"

namespace packtune::datasets {
namespace {

constexpr std::uint64_t kEnd = 64 * 1024;    // read at each end of a file
constexpr std::uint64_t kBlock = 4 * 1024;   // each block between them
constexpr std::uint64_t kBlocks = 16;
constexpr std::uint64_t kWhole = 2 * kEnd + kBlocks * kBlock;  // up to this, the whole file

// Closes the file however the fingerprint ends.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

[[noreturn]] void cannot_read(const std::string& path, int error) {
  throw InputError(path + ": cannot read the data file (" + std::strerror(error) + ")");
}

std::string hex(const unsigned char* bytes, unsigned int n) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out += digits[bytes[i] >> 4];
    out += digits[bytes[i] & 15];
  }
  return out;
}

}  // namespace

std::vector<ByteRange> sampled_ranges(std::uint64_t size) {
  if (size == 0) return {};
  if (size <= kWhole) return {{0, size}};
  std::vector<ByteRange> ranges{{0, kEnd}};
  // Each block centred in its sixteenth of the middle; the middle is longer than 16 blocks,
  // so they neither overlap each other nor the ends.
  const std::uint64_t middle = size - 2 * kEnd;
  for (std::uint64_t i = 0; i < kBlocks; ++i) {
    ranges.push_back({kEnd + (2 * i + 1) * middle / (2 * kBlocks) - kBlock / 2, kBlock});
  }
  ranges.push_back({size - kEnd, kEnd});
  return ranges;
}

FileFingerprint fingerprint_file(const std::string& path) {
  const Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) cannot_read(path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) cannot_read(path, errno);
  if (!S_ISREG(st.st_mode)) throw InputError(path + ": not a regular file");
  FileFingerprint f;
  f.path = path;
  f.size = static_cast<std::uint64_t>(st.st_size);
  f.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;

  const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> sha(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!sha || EVP_DigestInit_ex(sha.get(), EVP_sha256(), nullptr) != 1) throw Error("SHA-256: cannot start a digest");
  std::vector<unsigned char> buffer(kEnd);
  for (const auto& range : sampled_ranges(f.size)) {
    for (std::uint64_t done = 0; done < range.length;) {
      const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(buffer.size(), range.length - done));
      const ssize_t n = ::pread(fd.get(), buffer.data(), want, static_cast<off_t>(range.offset + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) cannot_read(path, errno);
      if (n == 0) throw InputError(path + ": the data file was cut short while it was read");
      EVP_DigestUpdate(sha.get(), buffer.data(), static_cast<std::size_t>(n));
      done += static_cast<std::uint64_t>(n);
    }
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(sha.get(), digest, &length) != 1) throw Error("SHA-256: cannot finish a digest");
  f.sample_sha256 = hex(digest, length);
  return f;
}

std::vector<FileFingerprint> fingerprint_data(const DataOptions& options) {
  std::vector<FileFingerprint> out;
  for (const auto& path : files_read(options)) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) continue;
    out.push_back(fingerprint_file(path));
  }
  return out;
}

std::vector<std::string> data_changes(const std::vector<FileFingerprint>& recorded,
                                      const std::vector<FileFingerprint>& now) {
  std::map<std::string, const FileFingerprint*> current;
  for (const auto& f : now) current[f.path] = &f;
  std::vector<std::string> changes;
  for (const auto& was : recorded) {
    const auto it = current.find(was.path);
    if (it == current.end()) {
      changes.push_back(was.path + " (gone)");
      continue;
    }
    const auto& is = *it->second;
    current.erase(it);
    std::string what;
    const auto add = [&what](const std::string& part) { what += (what.empty() ? "" : ", ") + part; };
    if (is.size != was.size) add("size " + std::to_string(was.size) + " -> " + std::to_string(is.size) + " bytes");
    if (is.sample_sha256 != was.sample_sha256) add("content");
    // A file hashed whole with the same bytes was rewritten unchanged (a data script run
    // again); of a larger one only the sample is known to be the same.
    const bool whole_same = what.empty() && is.size <= kWhole;
    if (is.mtime_ns != was.mtime_ns && !whole_same) add("modification time");
    if (what == "modification time") what += "; size and sampled content the same";
    if (!what.empty()) changes.push_back(was.path + " (" + what + ")");
  }
  for (const auto& f : now) {
    if (current.count(f.path)) changes.push_back(f.path + " (new)");
  }
  return changes;
}

void to_json(nlohmann::json& j, const FileFingerprint& f) {
  j = {{"path", f.path}, {"size", f.size}, {"mtime_ns", f.mtime_ns}, {"sample_sha256", f.sample_sha256}};
}

void from_json(const nlohmann::json& j, FileFingerprint& f) {
  try {
    f.path = j.at("path").get<std::string>();
    f.size = j.at("size").get<std::uint64_t>();
    f.mtime_ns = j.at("mtime_ns").get<std::int64_t>();
    f.sample_sha256 = j.at("sample_sha256").get<std::string>();
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("data_files: not a data file's fingerprint (") + e.what() + ")");
  }
}

}  // namespace packtune::datasets
