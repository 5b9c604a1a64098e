#pragma once
// An actor's checkpoint transfers with the driver, for an actor that does not share the
// driver's file system: its own socket and thread, so that files move while the pack trains.
// Resumes pull checkpoints from the driver's store; checkpoints the actor writes are offered to
// the driver, which pulls them into its store (file_transfer.hpp has the flow control).
#include <atomic>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "protocol/curve_keys.hpp"
#include "protocol/file_transfer.hpp"
#include "protocol/zmq_channel.hpp"

namespace packtune::actor_process {

class TransferClient {
 public:
  // `keys`: the actor's CURVE keys when the driver requires them, else null.
  TransferClient(const std::string& driver, const CurveKeys* keys, TransferOptions options);
  ~TransferClient();
  TransferClient(const TransferClient&) = delete;
  TransferClient& operator=(const TransferClient&) = delete;

  // Pulls `name` from the driver's store into `local_path`. `verify` (on this client's thread)
  // checks the file before it is handed out and throws for a damaged one, which is fetched
  // again. The future gives `local_path`, or throws Error saying why the file could not be had.
  std::future<std::string> fetch(const std::string& name, const std::string& local_path,
                                 ChunkFetcher::Verify verify = {});
  // Offers the file at `local_path` to the driver's store as `name`. The future gives its path
  // in the store once the driver has it whole and verified, or throws Error.
  std::future<std::string> upload(const std::string& local_path, const std::string& name);
  // The secret of the actor's last Welcome: the driver takes an Offer or a FetchChunk only
  // with it. Transfers sent from now on carry it.
  void set_token(const std::string& token);

 private:
  struct Fetch {
    std::unique_ptr<ChunkFetcher> fetcher;
    std::promise<std::string> done;
  };
  struct Upload {
    std::string local_path;
    std::string name;
    std::promise<std::string> done;
    std::chrono::steady_clock::time_point last_heard;
  };
  struct Request {
    bool upload = false;
    std::string name;
    std::string local_path;
    std::promise<std::string> done;
    ChunkFetcher::Verify verify;  // fetches only
  };

  void run();
  void start(Request& request);
  void send_requests(Fetch& fetch);
  void on_message(Received& received);
  void tick();
  void wake();
  std::string token();

  TransferOptions options_;
  zmq::context_t context_;
  zmq::socket_t socket_;  // the thread's
  zmq::socket_t wake_in_;  // the thread's end of the wake-up pair
  zmq::socket_t wake_out_;  // callers' end, under mutex_
  std::mutex mutex_;
  std::vector<Request> requests_;  // handed over to the thread, under mutex_
  std::string token_;              // under mutex_
  std::map<std::uint64_t, Fetch> fetches_;
  std::map<std::uint64_t, Upload> uploads_;
  std::uint64_t next_transfer_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace packtune::actor_process
