#pragma once
// Checkpoint files over ZeroMQ, for actors that do not share the driver's file system.
//
// The side that needs a file pulls it (ChunkFetcher): it asks for one chunk, learns the
// file's size from the answer, then keeps at most `window` FetchChunk requests outstanding,
// one new request per chunk that arrives. The holder answers each request with one Chunk read
// straight from the file (serve_chunk), so neither end holds more than `window` chunks,
// however large the file. A transfer that goes quiet re-asks for what is missing; a file
// that arrives whole but fails verification is fetched again; both a bounded number of times.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "protocol/protocol.hpp"

namespace packtune {

struct TransferOptions {
  std::uint32_t chunk_bytes = 1 << 20;
  int window = 8;                          // chunk requests outstanding at most
  double quiet_seconds = 10;               // no chunk this long: ask again for the missing ones
  int attempts = 3;                        // per transfer: re-asks, and whole re-fetches after bad files
  // fsync the file and its folder before it counts as arrived: for the driver's store, whose
  // acknowledgement lets the actor delete its copy. An actor's fetched copy is read once.
  bool durable = false;
  // The owner verifies a file that arrived whole (arrived(), part_path()) where it likes, on
  // another thread, and says how it went with on_verified(): a driver's loop must not wait on
  // a peer's file. The fsync of `durable` is then the owner's too.
  bool verify_later = false;
};

// Whether `name` may be served or stored: a checkpoint file's base name, nothing that walks
// out of its folder.
bool is_transfer_name(const std::string& name);

// Answers one FetchChunk from the files in `dir`: the Chunk header, and the bytes as a
// ZeroMQ message (read into it, sent without another copy).
std::pair<protocol::Chunk, zmq::message_t> serve_chunk(const std::string& dir, const protocol::FetchChunk& request,
                                                       std::uint32_t max_chunk_bytes);

// Pulls one file into `local_path` (written to `local_path.part` and renamed when whole and
// verified). Sans I/O: the caller sends what `take_requests` returns and feeds the Chunks back.
class ChunkFetcher {
 public:
  using Clock = std::chrono::steady_clock;
  // `verify` throws (with the reason) for a file that arrived whole but is damaged.
  using Verify = std::function<void(const std::string& path)>;

  // `size`: what the holder declared (an Offer); a file of any other size is refused before a
  // byte of it is asked for beyond the first chunk.
  ChunkFetcher(std::uint64_t transfer, std::string name, std::string local_path, TransferOptions options,
               Verify verify = {}, std::optional<std::uint64_t> size = std::nullopt);
  ~ChunkFetcher();
  ChunkFetcher(const ChunkFetcher&) = delete;
  ChunkFetcher& operator=(const ChunkFetcher&) = delete;

  std::uint64_t transfer() const { return transfer_; }
  const std::string& name() const { return name_; }
  const std::string& local_path() const { return local_path_; }

  // Requests to send now.
  std::vector<protocol::FetchChunk> take_requests();
  // A Chunk of this transfer with its bytes; stale and duplicate chunks are ignored.
  void on_chunk(const protocol::Chunk& chunk, const void* data, std::size_t size);
  // Call now and then: a transfer quiet for `quiet_seconds` re-asks for its missing chunks.
  void on_tick(Clock::time_point now);

  bool done() const { return state_ == State::Done; }
  bool failed() const { return state_ == State::Failed; }
  // verify_later: the file is whole in part_path() and waits for on_verified().
  bool arrived() const { return state_ == State::Arrived; }
  const std::string& part_path() const { return part_path_; }
  // The owner's verification of an arrived file: "" keeps it, else why it is damaged (fetched
  // again, a bounded number of times).
  void on_verified(const std::string& error);
  const std::string& error() const { return error_; }
  std::uint64_t total_bytes() const { return total_; }
  int outstanding() const { return static_cast<int>(outstanding_.size()); }

 private:
  enum class State { Sizing, Fetching, Arrived, Done, Failed };
  void open_part();
  void request(std::uint64_t offset);
  void fill_window();
  void finish();
  void keep();
  void retry(const std::string& why);
  void fail(const std::string& why);

  std::uint64_t transfer_;
  std::string name_;
  std::string local_path_;
  std::string part_path_;
  TransferOptions options_;
  Verify verify_;
  std::optional<std::uint64_t> declared_;
  State state_ = State::Sizing;
  std::string error_;
  int fd_ = -1;
  std::uint64_t total_ = 0;
  std::uint64_t next_offset_ = 0;  // the first offset never asked for
  std::uint64_t received_ = 0;
  std::map<std::uint64_t, Clock::time_point> outstanding_;  // offset -> when asked
  std::vector<protocol::FetchChunk> to_send_;
  Clock::time_point last_progress_ = Clock::now();
  int attempts_ = 0;
};

}  // namespace packtune
