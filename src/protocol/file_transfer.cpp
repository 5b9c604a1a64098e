#include "protocol/file_transfer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "packtune/error.hpp"

namespace packtune {

bool is_transfer_name(const std::string& name) {
  if (name.empty() || name.size() > 255 || name[0] == '.') return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '_' || c == '.';
    if (!ok) return false;
  }
  return name.size() > 3 && name.compare(name.size() - 3, 3, ".h5") == 0;
}

std::pair<protocol::Chunk, zmq::message_t> serve_chunk(const std::string& dir, const protocol::FetchChunk& request,
                                                       std::uint32_t max_chunk_bytes) {
  protocol::Chunk chunk;
  chunk.transfer = request.transfer;
  chunk.offset = request.offset;
  if (!is_transfer_name(request.name)) {
    chunk.error = "not a checkpoint name: " + request.name;
    return {chunk, zmq::message_t()};
  }
  const std::string path = dir + "/" + request.name;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    chunk.error = "cannot open " + path + ": " + std::strerror(errno);
    return {chunk, zmq::message_t()};
  }
  const off_t size = ::lseek(fd, 0, SEEK_END);
  chunk.total = size < 0 ? 0 : static_cast<std::uint64_t>(size);
  const std::uint64_t want =
      request.offset >= chunk.total ? 0 : std::min<std::uint64_t>({request.length, max_chunk_bytes, chunk.total - request.offset});
  zmq::message_t data(want);
  std::uint64_t done = 0;
  while (done < want) {
    const auto n = ::pread(fd, static_cast<char*>(data.data()) + done, want - done,
                           static_cast<off_t>(request.offset + done));
    if (n <= 0) {
      chunk.error = "cannot read " + path + (n < 0 ? std::string(": ") + std::strerror(errno) : ": file shrank");
      ::close(fd);
      return {chunk, zmq::message_t()};
    }
    done += static_cast<std::uint64_t>(n);
  }
  ::close(fd);
  return {chunk, std::move(data)};
}

ChunkFetcher::ChunkFetcher(std::uint64_t transfer, std::string name, std::string local_path, TransferOptions options,
                           Verify verify, std::optional<std::uint64_t> size)
    : transfer_(transfer), name_(std::move(name)), local_path_(std::move(local_path)),
      part_path_(local_path_ + ".part"), options_(options), verify_(std::move(verify)), declared_(size) {
  try {
    open_part();
  } catch (const Error& e) {
    fail(e.what());
    return;
  }
  request(0);
}

ChunkFetcher::~ChunkFetcher() {
  if (fd_ >= 0) ::close(fd_);
  if (state_ != State::Done) {
    std::error_code ec;
    std::filesystem::remove(part_path_, ec);
  }
}

void ChunkFetcher::open_part() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = ::open(part_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot create " + part_path_ + ": " + std::strerror(errno));
}

std::vector<protocol::FetchChunk> ChunkFetcher::take_requests() {
  std::vector<protocol::FetchChunk> out;
  out.swap(to_send_);
  return out;
}

void ChunkFetcher::request(std::uint64_t offset) {
  to_send_.push_back({transfer_, name_, offset, options_.chunk_bytes});
  outstanding_[offset] = Clock::now();
}

void ChunkFetcher::fill_window() {
  while (static_cast<int>(outstanding_.size()) < options_.window && next_offset_ < total_) {
    request(next_offset_);
    next_offset_ += options_.chunk_bytes;
  }
}

void ChunkFetcher::on_chunk(const protocol::Chunk& chunk, const void* data, std::size_t size) {
  if (state_ == State::Done || state_ == State::Failed || chunk.transfer != transfer_) return;
  auto it = outstanding_.find(chunk.offset);
  if (it == outstanding_.end()) return;  // answered already (a re-ask crossed the first answer)
  outstanding_.erase(it);
  last_progress_ = Clock::now();
  if (!chunk.error.empty()) {
    fail(name_ + ": " + chunk.error);
    return;
  }
  if (state_ == State::Sizing) {
    if (declared_ && chunk.total != *declared_) {
      // A holder that offered one size and serves another could make the store write
      // without end: the offer's size is the most that is ever written.
      fail(name_ + ": offered as " + std::to_string(*declared_) + " bytes, served as " + std::to_string(chunk.total));
      return;
    }
    total_ = chunk.total;
    next_offset_ = options_.chunk_bytes;
    state_ = State::Fetching;
  } else if (chunk.total != total_) {
    retry(name_ + " changed size while it was being fetched");
    return;
  }
  const std::uint64_t expected = std::min<std::uint64_t>(options_.chunk_bytes, total_ - std::min(total_, chunk.offset));
  if (size != expected) {
    retry(name_ + ": a chunk at " + std::to_string(chunk.offset) + " had " + std::to_string(size) + " bytes, not " +
          std::to_string(expected));
    return;
  }
  std::size_t done = 0;
  while (done < size) {
    const auto n = ::pwrite(fd_, static_cast<const char*>(data) + done, size - done,
                            static_cast<off_t>(chunk.offset + done));
    if (n <= 0) {
      fail("cannot write " + part_path_ + ": " + std::strerror(errno));
      return;
    }
    done += static_cast<std::size_t>(n);
  }
  received_ += size;
  fill_window();
  if (received_ == total_ && outstanding_.empty()) finish();
}

void ChunkFetcher::finish() {
  if ((options_.durable && !options_.verify_later && ::fsync(fd_) != 0) || ::close(fd_) != 0) {
    fd_ = -1;
    fail("cannot write " + part_path_ + ": " + std::strerror(errno));
    return;
  }
  fd_ = -1;
  if (options_.verify_later) {
    state_ = State::Arrived;
    return;
  }
  if (verify_) {
    try {
      verify_(part_path_);
    } catch (const std::exception& e) {
      retry(std::string("it arrived damaged: ") + e.what());
      return;
    }
  }
  keep();
}

void ChunkFetcher::on_verified(const std::string& error) {
  if (state_ != State::Arrived) return;
  if (!error.empty()) {
    retry("it arrived damaged: " + error);
    return;
  }
  keep();
}

// The verified file takes its name.
void ChunkFetcher::keep() {
  std::error_code ec;
  std::filesystem::rename(part_path_, local_path_, ec);
  if (ec) {
    fail("cannot rename " + part_path_ + ": " + ec.message());
    return;
  }
  if (options_.durable) {
    const auto folder = std::filesystem::path(local_path_).parent_path().string();
    const int dir = ::open(folder.empty() ? "." : folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
      ::fsync(dir);
      ::close(dir);
    }
  }
  state_ = State::Done;
}

// Starts over from the first chunk: the holder's file is the only source of truth.
void ChunkFetcher::retry(const std::string& why) {
  if (++attempts_ >= options_.attempts) {
    fail(name_ + ": " + why + " (" + std::to_string(attempts_) + " attempts)");
    return;
  }
  try {
    open_part();
  } catch (const Error& e) {
    fail(e.what());
    return;
  }
  outstanding_.clear();
  to_send_.clear();
  received_ = total_ = next_offset_ = 0;
  state_ = State::Sizing;
  last_progress_ = Clock::now();
  request(0);
}

void ChunkFetcher::on_tick(Clock::time_point now) {
  if (state_ != State::Sizing && state_ != State::Fetching) return;
  if (now - last_progress_ < std::chrono::duration<double>(options_.quiet_seconds)) return;
  if (++attempts_ >= options_.attempts) {
    fail(name_ + ": no answer for " + std::to_string(static_cast<int>(options_.quiet_seconds)) + " s (" +
         std::to_string(attempts_) + " attempts)");
    return;
  }
  last_progress_ = now;
  const auto offsets = outstanding_;
  for (const auto& [offset, asked] : offsets) request(offset);
}

void ChunkFetcher::fail(const std::string& why) {
  state_ = State::Failed;
  error_ = why;
  outstanding_.clear();
  to_send_.clear();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  std::error_code ec;
  std::filesystem::remove(part_path_, ec);
}

}  // namespace packtune
