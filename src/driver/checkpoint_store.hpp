#pragma once
// The driver's checkpoint store, DIR/checkpoints: the one place every checkpoint the tuner may
// still promote lives. Actors that share the driver's file system (its `.store` file holds the
// token they were sent) read and write it directly. For the others the store serves chunks of
// its files and pulls the files they offer, a few at a time, verifying each before it counts.
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include <zmq.hpp>

#include "protocol/file_transfer.hpp"
#include "protocol/protocol.hpp"
#include "protocol/zmq_channel.hpp"

namespace packtune {

class CheckpointStore {
 public:
  // Creates `dir` and its `.store` token file. `verify` throws for a damaged file.
  CheckpointStore(std::string dir, TransferOptions options, ChunkFetcher::Verify verify);

  using Key = std::pair<std::string, std::uint64_t>;  // peer identity, its transfer id

  const std::string& dir() const { return dir_; }
  const std::string& token() const { return token_; }
  std::string path_of(const std::string& name) const { return dir_ + "/" + name; }

  // Takes a checkpoint transfer message (FetchChunk, Offer, Chunk) from any peer the socket
  // admitted; returns false for every other message.
  bool handle(zmq::socket_t& router, Routed& routed);

  // An actor's request for a chunk of a stored file.
  void serve(zmq::socket_t& router, const std::string& peer, const protocol::FetchChunk& request);
  // An actor offers a checkpoint it wrote: it is pulled when a slot is free.
  void on_offer(zmq::socket_t& router, const std::string& peer, const protocol::Offer& offer);
  void on_chunk(zmq::socket_t& router, const std::string& peer, const protocol::Chunk& chunk,
                const zmq::message_t& payload);
  // Re-asks quiet pulls, answers finished and failed ones; call every loop.
  void tick(zmq::socket_t& router);

  // Deletes a stored checkpoint; returns whether it was there.
  bool remove(const std::string& path);
  // Leftovers of writers that died mid-file (`*.h5.tmp-*`, `*.part`).
  void remove_partial_files();

  int active_pulls() const { return static_cast<int>(pulls_.size()); }
  std::int64_t bytes_received() const { return bytes_received_; }

 private:
  struct Waiting {
    std::string peer;
    protocol::Offer offer;
  };

  using Pulls = std::map<Key, std::unique_ptr<ChunkFetcher>>;
  void start_pulls(zmq::socket_t& router);
  Pulls::iterator settle(zmq::socket_t& router, Pulls::iterator it);
  void send(zmq::socket_t& router, const std::string& peer, const protocol::Message& message);
  void send_requests(zmq::socket_t& router, const std::string& peer, ChunkFetcher& fetcher);

  std::string dir_;
  std::string token_;
  TransferOptions options_;
  ChunkFetcher::Verify verify_;
  Pulls pulls_;
  std::deque<Waiting> waiting_;  // offers beyond the pulls the store runs at once
  std::int64_t bytes_received_ = 0;
};

}  // namespace packtune
