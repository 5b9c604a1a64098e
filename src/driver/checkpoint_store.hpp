#pragma once
// The driver's checkpoint store, DIR/checkpoints: the one place every checkpoint the tuner may
// still promote lives. Actors that share the driver's file system (its `.store` file holds the
// token they were sent) read and write it directly. For the others the store serves chunks of
// its files and pulls the files they offer, a few at a time, verifying each before it counts:
// on worker threads, as a peer's file may take a verification its whole timeout, and the
// driver's loop must never wait on a peer. Which peer may offer or fetch what is the driver
// core's business (DriverCore::admit_transfer); the store takes what it is handed.
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "protocol/file_transfer.hpp"
#include "protocol/protocol.hpp"
#include "protocol/zmq_channel.hpp"

namespace packtune {

class CheckpointStore {
 public:
  // Creates `dir` and its `.store` token file. `verify` throws for a damaged file.
  CheckpointStore(std::string dir, TransferOptions options, ChunkFetcher::Verify verify);
  // Waits for the verifications under way (each bounded by `verify`'s own timeout).
  ~CheckpointStore();
  CheckpointStore(const CheckpointStore&) = delete;
  CheckpointStore& operator=(const CheckpointStore&) = delete;

  using Key = std::pair<std::string, std::uint64_t>;  // peer identity, its transfer id

  const std::string& dir() const { return dir_; }
  const std::string& token() const { return token_; }
  std::string path_of(const std::string& name) const { return dir_ + "/" + name; }

  // Takes a checkpoint transfer message (FetchChunk, Offer, Chunk) the driver core admitted;
  // returns false for every other message.
  bool handle(zmq::socket_t& router, Routed& routed);
  static bool is_transfer(const protocol::Message& message) {
    return std::holds_alternative<protocol::FetchChunk>(message) || std::holds_alternative<protocol::Offer>(message) ||
           std::holds_alternative<protocol::Chunk>(message);
  }
  // Whether `peer` is being asked for the file of `transfer`: the only Chunks the store takes.
  bool pulling(const std::string& peer, std::uint64_t transfer) const { return pulls_.count({peer, transfer}) > 0; }

  // An actor's request for a chunk of a stored file.
  void serve(zmq::socket_t& router, const std::string& peer, const protocol::FetchChunk& request);
  // An actor offers a checkpoint it wrote: it is pulled when a slot is free.
  void on_offer(zmq::socket_t& router, const std::string& peer, const protocol::Offer& offer);
  void on_chunk(zmq::socket_t& router, const std::string& peer, const protocol::Chunk& chunk,
                const zmq::message_t& payload);
  // Re-asks quiet pulls, takes the verifications that finished, answers finished and failed
  // pulls; call every loop.
  void tick(zmq::socket_t& router);
  // The peers a message could not be queued for since the last call (their pipes are full):
  // the driver takes them out of service (DriverCore::peer_stalled).
  std::vector<std::string> take_stalled() { return std::exchange(stalled_, {}); }

  // --- what the store holds for each trial, each file written whole ---------------------

  using TrialId = std::int64_t;
  // With keep_checkpoints "needed" a trial keeps only its newest checkpoint: promotions and
  // restarts resume from that one. With "all" every file stays.
  void set_keep_all(bool keep_all) { keep_all_ = keep_all; }
  // A job's final report named `path`, written at `budget`.
  void record(TrialId trial, const std::string& path, double budget);
  // A resumed experiment: `recorded` are the records its journal holds, oldest first (only
  // file names count, so a moved results folder still resumes). Records whose files are
  // gone are dropped, and a trial's checkpoint that is newer than its last record (written
  // after the journal's last commit) is taken too, if `adoptable(trial, budget)` says so (no
  // predicate: always): resuming from it must not skip a report the journal lacks.
  struct Recorded {
    TrialId trial = -1;
    std::string path;
    double budget = 0;
  };
  void recover(const std::vector<Recorded>& recorded,
               const std::function<bool(TrialId, double)>& adoptable = nullptr);
  bool has(TrialId trial) const;
  // Deletes every checkpoint of `trial` (unless all are kept): it will never resume or be tested.
  void drop(TrialId trial);
  std::vector<std::string> newest_first(TrialId trial) const;
  // The held checkpoint of `trial` at `budget` (to a budget's six digits in a file name), or "".
  std::string path_at(TrialId trial, double budget) const;
  double newest_budget(TrialId trial) const;  // 0 without a checkpoint
  // The trial's resume fell back to `start_budget` (0: scratch): the checkpoints after it
  // could not be used and are forgotten.
  void forget_after(TrialId trial, double start_budget);

  struct Usage {
    std::int64_t files = 0;
    std::int64_t bytes = 0;
    int deleted = 0;  // over the whole run
  };
  // The run is over: partial files go and, with "needed", all but the newest checkpoints of
  // the `keep_best` best trials (highest budget reached first, then `better`, which orders
  // trials by their metric) and of `also` (best.json's trial, which those need not include:
  // its best report may be at a lower budget, or tie with theirs); -1: none.
  Usage finish(int keep_best, const std::function<bool(TrialId, TrialId)>& better, TrialId also = -1);
  // What the folder holds now, deleting nothing: a run that stopped early keeps every
  // checkpoint for `packtune run --resume`.
  Usage usage() const;

  int active_pulls() const { return static_cast<int>(pulls_.size()); }
  // Files that arrived whole and wait for (or are in) verification on a worker thread.
  int verifying() const { return static_cast<int>(verifying_.size()); }
  std::int64_t bytes_received() const { return bytes_received_; }

 private:
  struct Waiting {
    std::string peer;
    protocol::Offer offer;
  };

  using Pulls = std::map<Key, std::unique_ptr<ChunkFetcher>>;
  void start_pulls(zmq::socket_t& router);
  Pulls::iterator settle(zmq::socket_t& router, Pulls::iterator it);
  // Without waiting, as every send of the driver's router: a peer whose queue is full gets
  // nothing, and is kept for take_stalled().
  void send(zmq::socket_t& router, const std::string& peer, const protocol::Message& message);
  void send_requests(zmq::socket_t& router, const std::string& peer, ChunkFetcher& fetcher);
  void verify_arrived(const Key& key, ChunkFetcher& fetcher);
  void take_verified(zmq::socket_t& router);
  void work();

  std::string dir_;
  std::vector<std::string> stalled_;  // see take_stalled
  std::string token_;
  TransferOptions options_;
  ChunkFetcher::Verify verify_;
  struct Held {
    std::string path;
    double budget = 0;
  };
  bool remove(const std::string& path);
  void remove_partial_files();

  Pulls pulls_;
  std::map<TrialId, std::vector<Held>> held_;  // oldest first
  bool keep_all_ = false;
  int deleted_ = 0;
  std::deque<Waiting> waiting_;  // offers beyond the pulls the store runs at once
  std::int64_t bytes_received_ = 0;

  // Verification on worker threads: the loop hands over (key, .part path) and takes back
  // (key, error) in tick(). Only the fields under mutex_ are shared.
  std::set<Key> verifying_;  // the loop's: handed over, not yet taken back
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::pair<Key, std::string>> to_verify_;  // under mutex_
  std::deque<std::pair<Key, std::string>> verified_;   // under mutex_: the error, or ""
  bool stopping_ = false;                               // under mutex_
  std::vector<std::thread> workers_;                    // started with the first file to verify
};

}  // namespace packtune
