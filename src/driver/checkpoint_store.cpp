#include "driver/checkpoint_store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <fstream>

#include <spdlog/spdlog.h>

#include "packtune/error.hpp"
#include "packtune/test_hold.hpp"
#include "protocol/zmq_channel.hpp"
#include "spec/checkpoint_name.hpp"
#include "util/random_token.hpp"

namespace packtune {
namespace {

// Pulls run at once: each holds at most a window of chunks in flight, so the driver's
// memory for incoming checkpoints stays bounded however many actors offer at the same time.
constexpr std::size_t kMaxPulls = 4;
// Offers waiting for a pull slot; beyond them an offer is refused at once (the actor's save
// fails, and a job's final report goes without its checkpoint).
constexpr std::size_t kMaxWaiting = 1024;
// Threads verifying files at once. A file may hold one for verify's whole timeout; pulls
// that arrived wait their turn in their slot, so a hostile file costs a slot and a thread
// for a while, never the driver's loop.
constexpr int kVerifyThreads = 2;

}  // namespace

CheckpointStore::CheckpointStore(std::string dir, TransferOptions options, ChunkFetcher::Verify verify)
    : dir_(std::filesystem::absolute(dir).string()), token_(util::random_token()), options_(options),
      verify_(std::move(verify)) {
  options_.durable = true;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  std::ofstream out(dir_ + "/.store", std::ios::trunc);
  out << token_ << "\n";
  if (ec || !out.flush()) throw Error("cannot write the checkpoint store " + dir_ + "; is the output folder writable?");
  options_.verify_later = true;
}

CheckpointStore::~CheckpointStore() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    to_verify_.clear();
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void CheckpointStore::send(zmq::socket_t& router, const std::string& peer, const protocol::Message& message) {
  try {
    if (!send_message(router, peer, message)) stalled_.push_back(peer);
  } catch (const zmq::error_t& e) {
    spdlog::debug("checkpoint store: cannot answer a peer that left: {}", e.what());
  }
}

bool CheckpointStore::handle(zmq::socket_t& router, Routed& routed) {
  if (auto* request = std::get_if<protocol::FetchChunk>(&routed.message)) {
    serve(router, routed.identity, *request);
  } else if (auto* offer = std::get_if<protocol::Offer>(&routed.message)) {
    on_offer(router, routed.identity, *offer);
  } else if (auto* chunk = std::get_if<protocol::Chunk>(&routed.message)) {
    on_chunk(router, routed.identity, *chunk, routed.payload);
  } else {
    return false;
  }
  return true;
}

void CheckpointStore::serve(zmq::socket_t& router, const std::string& peer, const protocol::FetchChunk& request) {
  auto [chunk, data] = serve_chunk(dir_, request, options_.chunk_bytes);
  if (!chunk.error.empty()) spdlog::warn("checkpoint store: a fetch was refused: {}", chunk.error);
  try {
    if (!send_message(router, peer, chunk, data)) stalled_.push_back(peer);
  } catch (const zmq::error_t& e) {
    spdlog::debug("checkpoint store: cannot answer a peer that left: {}", e.what());
  }
}

void CheckpointStore::on_offer(zmq::socket_t& router, const std::string& peer, const protocol::Offer& offer) {
  if (!is_transfer_name(offer.name)) {
    send(router, peer, protocol::Stored{offer.transfer, "", "not a checkpoint name: " + offer.name});
    return;
  }
  if (offer.size > protocol::kMaxCheckpointBytes) {
    send(router, peer, protocol::Stored{offer.transfer, "", "a checkpoint of " + std::to_string(offer.size) +
                                                                " bytes is beyond the store's limit"});
    return;
  }
  if (pulls_.count({peer, offer.transfer})) return;  // offered twice: the pull runs already
  if (waiting_.size() >= kMaxWaiting) {
    send(router, peer, protocol::Stored{offer.transfer, "", "the store has too many offers waiting"});
    return;
  }
  waiting_.push_back({peer, offer});
  start_pulls(router);
}

void CheckpointStore::start_pulls(zmq::socket_t& router) {
  while (pulls_.size() < kMaxPulls && !waiting_.empty()) {
    auto w = std::move(waiting_.front());
    waiting_.pop_front();
    if (pulls_.count({w.peer, w.offer.transfer})) continue;
    auto fetcher = std::make_unique<ChunkFetcher>(w.offer.transfer, w.offer.name, path_of(w.offer.name), options_,
                                                  nullptr, w.offer.size);
    send_requests(router, w.peer, *fetcher);
    pulls_[{w.peer, w.offer.transfer}] = std::move(fetcher);
  }
}

void CheckpointStore::send_requests(zmq::socket_t& router, const std::string& peer, ChunkFetcher& fetcher) {
  for (const auto& r : fetcher.take_requests()) send(router, peer, r);
}

void CheckpointStore::on_chunk(zmq::socket_t& router, const std::string& peer, const protocol::Chunk& chunk,
                               const zmq::message_t& payload) {
  auto it = pulls_.find({peer, chunk.transfer});
  if (it == pulls_.end()) return;
  it->second->on_chunk(chunk, payload.data(), payload.size());
  send_requests(router, peer, *it->second);
  if (it->second->arrived()) verify_arrived(it->first, *it->second);
  const bool ended = it->second->done() || it->second->failed();
  settle(router, it);
  if (ended) start_pulls(router);
}

void CheckpointStore::verify_arrived(const Key& key, ChunkFetcher& fetcher) {
  if (!verifying_.insert(key).second) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    to_verify_.emplace_back(key, fetcher.part_path());
    if (workers_.empty()) {
      for (int i = 0; i < kVerifyThreads; ++i) workers_.emplace_back([this] { work(); });
    }
  }
  wake_.notify_one();
}

// A worker thread: makes each file durable and verifies it. Touches nothing but the queues
// and the file it was handed; the pull waits in the loop's hands meanwhile.
void CheckpointStore::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || !to_verify_.empty(); });
    if (stopping_) return;
    auto [key, path] = std::move(to_verify_.front());
    to_verify_.pop_front();
    lock.unlock();
    std::string error;
    try {
      if (options_.durable) {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0 || ::fsync(fd) != 0) error = "cannot write " + path + ": " + std::strerror(errno);
        if (fd >= 0) ::close(fd);
      }
      // Where a hostile file would keep a worker (a verification that runs to its timeout).
      test_hold("driver.verifying");
      if (error.empty() && verify_) verify_(path);
    } catch (const std::exception& e) {
      error = e.what();
      if (error.empty()) error = "verification failed";
    }
    lock.lock();
    verified_.emplace_back(std::move(key), std::move(error));
  }
}

void CheckpointStore::take_verified(zmq::socket_t& router) {
  std::deque<std::pair<Key, std::string>> taken;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    taken.swap(verified_);
  }
  for (auto& [key, error] : taken) {
    verifying_.erase(key);
    auto it = pulls_.find(key);
    if (it == pulls_.end()) continue;
    it->second->on_verified(error);
    send_requests(router, key.first, *it->second);  // a damaged file is fetched again
  }
}

void CheckpointStore::tick(zmq::socket_t& router) {
  take_verified(router);
  const auto now = ChunkFetcher::Clock::now();
  for (auto it = pulls_.begin(); it != pulls_.end();) {
    it->second->on_tick(now);
    send_requests(router, it->first.first, *it->second);
    it = settle(router, it);
  }
  start_pulls(router);
}

// Answers a pull that ended, at once: the actor's final report waits for it.
CheckpointStore::Pulls::iterator CheckpointStore::settle(zmq::socket_t& router, Pulls::iterator it) {
  auto& [key, fetcher] = *it;
  if (fetcher->done()) {
    bytes_received_ += static_cast<std::int64_t>(fetcher->total_bytes());
    send(router, key.first, protocol::Stored{key.second, fetcher->local_path(), ""});
  } else if (fetcher->failed()) {
    spdlog::warn("checkpoint store: could not pull {}: {}", fetcher->name(), fetcher->error());
    send(router, key.first, protocol::Stored{key.second, "", fetcher->error()});
  } else {
    return std::next(it);
  }
  return pulls_.erase(it);
}

bool CheckpointStore::remove(const std::string& path) {
  std::error_code ec;
  const bool removed = std::filesystem::remove(path, ec);
  deleted_ += removed;
  return removed;
}

void CheckpointStore::record(TrialId trial, const std::string& path, double budget) {
  // The store deletes what it records: a report must not name a file anywhere else.
  const auto name = spec::file_name_of(path);
  if (path != path_of(name) || !is_transfer_name(name)) {
    spdlog::warn("checkpoint store: ignoring trial {}'s checkpoint {}: not a file of {}", trial, path, dir_);
    return;
  }
  auto& held = held_[trial];
  if (!keep_all_) {
    for (const auto& old : held) {
      if (old.path != path) remove(old.path);
    }
    held.clear();
  }
  // A file written again (population-based training's exploit replaces the member's own at
  // that budget) is held once, as the newest.
  held.erase(std::remove_if(held.begin(), held.end(), [&](const Held& h) { return h.path == path; }), held.end());
  held.push_back({path, budget});
}

void CheckpointStore::recover(const std::vector<Recorded>& recorded,
                              const std::function<bool(TrialId, double)>& adoptable) {
  namespace fs = std::filesystem;
  remove_partial_files();
  for (const auto& r : recorded) record(r.trial, path_of(fs::path(r.path).filename().string()), r.budget);
  std::error_code ec;
  for (auto& [trial, held] : held_) {
    held.erase(std::remove_if(held.begin(), held.end(), [&](const Held& h) { return !fs::exists(h.path, ec); }),
               held.end());
  }
  std::vector<Recorded> newer;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const auto name = entry.path().filename().string();
    const auto parsed = spec::parse_checkpoint_name(name);
    if (!parsed || !is_transfer_name(name)) continue;
    const auto [trial, budget] = *parsed;
    if (has(trial) && budget <= newest_budget(trial) * (1 + 1e-9)) continue;
    if (adoptable && !adoptable(trial, budget)) {
      spdlog::info("checkpoint store: trial {} also has {}, past a report the journal lacks; it resumes from an "
                   "older one and reports that again", trial, path_of(name));
      continue;
    }
    newer.push_back({trial, path_of(name), budget});
  }
  std::sort(newer.begin(), newer.end(), [](const Recorded& a, const Recorded& b) { return a.budget < b.budget; });
  for (const auto& r : newer) {
    spdlog::info("checkpoint store: trial {} also has {} (written after the journal's last entry)", r.trial, r.path);
    record(r.trial, r.path, r.budget);
  }
}

void CheckpointStore::drop(TrialId trial) {
  if (keep_all_) return;
  auto it = held_.find(trial);
  if (it == held_.end()) return;
  for (const auto& h : it->second) remove(h.path);
  held_.erase(it);
}

bool CheckpointStore::has(TrialId trial) const {
  auto it = held_.find(trial);
  return it != held_.end() && !it->second.empty();
}

std::vector<std::string> CheckpointStore::newest_first(TrialId trial) const {
  std::vector<std::string> out;
  auto it = held_.find(trial);
  if (it == held_.end()) return out;
  for (auto h = it->second.rbegin(); h != it->second.rend(); ++h) out.push_back(h->path);
  return out;
}

std::string CheckpointStore::path_at(TrialId trial, double budget) const {
  auto it = held_.find(trial);
  if (it == held_.end()) return {};
  // Records recovered from file names carry a budget rounded to six digits (%g).
  for (auto h = it->second.rbegin(); h != it->second.rend(); ++h) {
    if (std::abs(h->budget - budget) <= 1e-6 * std::max(1.0, std::abs(budget))) return h->path;
  }
  return {};
}

double CheckpointStore::newest_budget(TrialId trial) const {
  return has(trial) ? held_.at(trial).back().budget : 0;
}

void CheckpointStore::forget_after(TrialId trial, double start_budget) {
  auto it = held_.find(trial);
  if (it == held_.end()) return;
  while (!it->second.empty() && it->second.back().budget > start_budget) it->second.pop_back();
}

CheckpointStore::Usage CheckpointStore::finish(int keep_best, const std::function<bool(TrialId, TrialId)>& better,
                                               TrialId also) {
  remove_partial_files();
  std::error_code ec;
  if (!keep_all_) {
    // Only the first keep_best are wanted: a partial sort, with each trial's newest checkpoint
    // at hand. Sorting all of a 100,000-trial sweep by map lookups took seconds.
    std::vector<std::pair<TrialId, const Held*>> ranked;
    for (const auto& [trial, held] : held_) {
      if (!held.empty()) ranked.emplace_back(trial, &held.back());
    }
    const auto first = std::min(ranked.size(), static_cast<std::size_t>(std::max(0, keep_best)));
    std::partial_sort(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(first), ranked.end(),
                      [&](const auto& a, const auto& b) {
                        if (a.second->budget != b.second->budget) return a.second->budget > b.second->budget;
                        return better(a.first, b.first);
                      });
    std::set<std::string> keep;
    for (std::size_t i = 0; i < first; ++i) keep.insert(ranked[i].second->path);
    if (auto it = held_.find(also); it != held_.end() && !it->second.empty()) keep.insert(it->second.back().path);
    for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
      if (!keep.count(entry.path().string()) && entry.path().extension() == ".h5") remove(entry.path().string());
    }
  }
  return usage();
}

CheckpointStore::Usage CheckpointStore::usage() const {
  std::error_code ec;
  Usage usage;
  usage.deleted = deleted_;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".h5") continue;
    ++usage.files;
    usage.bytes += static_cast<std::int64_t>(entry.file_size());
  }
  return usage;
}

void CheckpointStore::remove_partial_files() {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir_, ec)) {
    const auto name = entry.path().filename().string();
    const bool part = name.size() > 5 && name.compare(name.size() - 5, 5, ".part") == 0;
    if (part || name.find(".h5.tmp-") != std::string::npos) std::filesystem::remove(entry.path(), ec);
  }
}

}  // namespace packtune
