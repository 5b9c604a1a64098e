#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include "../../file_bytes.hpp"
#include "../../temp_dir.hpp"
#include "actor_process/transfer_client.hpp"
#include "driver/checkpoint_store.hpp"
#include "packtune/error.hpp"
#include "protocol/zmq_channel.hpp"

using namespace packtune;
using namespace packtune::testing;

namespace {

// The driver's side: a ROUTER that routes transfer messages to the store, as the driver does.
struct DriverSide {
  zmq::context_t context{1};
  zmq::socket_t router{context, zmq::socket_type::router};
  CheckpointStore store;
  std::string endpoint;

  DriverSide(const std::string& dir, TransferOptions options, ChunkFetcher::Verify verify)
      : store(dir, options, std::move(verify)) {
    router.set(zmq::sockopt::linger, 0);
    router.bind("tcp://127.0.0.1:*");
    endpoint = router.get(zmq::sockopt::last_endpoint);
  }

  // Serves until the future is there; 20 s only bound a hang.
  template <class Future>
  void serve_until(Future& future) {
    serve_while([&] { return future.wait_for(std::chrono::seconds(0)) != std::future_status::ready; });
  }

  template <class Predicate>
  void serve_while(Predicate more) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (more() && std::chrono::steady_clock::now() < deadline) {
      while (auto routed = RouterInbox().receive(router, 10)) {
        store.handle(router, *routed);
      }
      store.tick(router);
    }
  }
};

// A store in a folder of its own, and checkpoint files made in it.
struct LocalStore {
  TempDir dir;
  CheckpointStore store{dir.file("checkpoints"), {}, {}};
  std::string make(const std::string& name) {
    write_file(store.path_of(name), "x");
    return store.path_of(name);
  }
};

}  // namespace

TEST_CASE("the store marks its folder so that actors can tell whether they share it") {
  TempDir dir;
  CheckpointStore store(dir.file("checkpoints"), {}, {});
  std::ifstream in(dir.file("checkpoints/.store"));
  std::string token;
  in >> token;
  CHECK(token == store.token());
  CHECK(token.size() == 32);
  CheckpointStore other(dir.file("other"), {}, {});
  CHECK(other.token() != store.token());
}

TEST_CASE("an actor's checkpoint reaches the store over tcp and comes back, verified, in small chunks") {
  TempDir driver_dir, actor_dir;
  TransferOptions options;
  options.chunk_bytes = 4096;  // many chunks, so the window matters
  options.window = 4;
  std::atomic<int> verified{0};  // the store verifies on its own threads
  auto verify = [&verified](const std::string& path) {
    ++verified;
    if (read_file(path).rfind("CKPT", 0) != 0) throw InputError(path + ": not a checkpoint");
  };
  DriverSide driver(driver_dir.file("checkpoints"), options, verify);
  actor_process::TransferClient client(driver.endpoint, nullptr, options);

  const auto bytes = "CKPT" + random_bytes(100'000, 4);
  const auto local = actor_dir.file("trial-1-budget-0.5.h5");
  std::ofstream(local, std::ios::binary) << bytes;

  auto stored = client.upload(local, "trial-1-budget-0.5.h5");
  driver.serve_until(stored);
  const auto path = stored.get();
  CHECK(path == driver.store.dir() + "/trial-1-budget-0.5.h5");
  CHECK(read_file(path) == bytes);
  CHECK(driver.store.bytes_received() == static_cast<std::int64_t>(bytes.size()));

  auto fetched = client.fetch("trial-1-budget-0.5.h5", actor_dir.file("back.h5"), verify);
  driver.serve_until(fetched);
  CHECK(read_file(fetched.get()) == bytes);
  CHECK(verified == 2);

  auto missing = client.fetch("trial-9-budget-1.h5", actor_dir.file("missing.h5"));
  driver.serve_until(missing);
  CHECK_THROWS_WITH(missing.get(), Catch::Contains("trial-9-budget-1.h5"));

  // A damaged upload is refused, and the store keeps nothing of it.
  const auto bad = actor_dir.file("trial-2-budget-0.5.h5");
  std::ofstream(bad, std::ios::binary) << "JUNK" << random_bytes(10'000, 5);
  auto refused = client.upload(bad, "trial-2-budget-0.5.h5");
  driver.serve_until(refused);
  CHECK_THROWS_WITH(refused.get(), Catch::Contains("not a checkpoint"));
  CHECK_FALSE(std::filesystem::exists(driver.store.dir() + "/trial-2-budget-0.5.h5"));
  CHECK_FALSE(std::filesystem::exists(driver.store.dir() + "/trial-2-budget-0.5.h5.part"));

  auto escape = client.upload(bad, "../escape.h5");
  driver.serve_until(escape);
  CHECK_THROWS_WITH(escape.get(), Catch::Contains("not a checkpoint name"));
}

TEST_CASE("the store keeps a trial's newest checkpoint, forgets unusable ones and keeps the best at the end") {
  LocalStore local;
  auto& store = local.store;
  auto make = [&](const std::string& name) { return local.make(name); };
  store.record(1, make("trial-1-budget-0.5.h5"), 0.5);
  store.record(1, make("trial-1-budget-1.h5"), 1);
  CHECK(store.newest_first(1) == std::vector<std::string>{store.path_of("trial-1-budget-1.h5")});
  CHECK_FALSE(std::filesystem::exists(store.path_of("trial-1-budget-0.5.h5")));
  CHECK(store.newest_budget(1) == 1);
  CHECK_FALSE(store.has(2));
  CHECK(store.newest_budget(2) == 0);

  store.forget_after(1, 0);  // its resume fell back to scratch
  CHECK_FALSE(store.has(1));

  // A report may only name a file of the store: the store deletes what it records.
  const auto outside = local.dir.file("precious.h5");
  write_file(outside, "keep me");
  store.record(3, outside, 0.5);
  store.record(3, make("trial-3-budget-1.h5"), 1);
  CHECK(std::filesystem::exists(outside));
  CHECK(store.newest_first(3).size() == 1);

  for (int t = 4; t <= 7; ++t) store.record(t, make("trial-" + std::to_string(t) + "-budget-1.h5"), 1);
  make("trial-8-budget-1.h5.part");
  // A run that stopped early deletes nothing: --resume needs every checkpoint.
  const auto stopped = store.usage();
  CHECK(stopped.files == 6);  // 1-budget-1, 3 to 7 (the .part file is not a checkpoint)
  CHECK(stopped.deleted == 1);
  CHECK(std::filesystem::exists(store.path_of("trial-8-budget-1.h5.part")));
  // Trial 3 reached the same budget; lower ids rank better here.
  const auto usage = store.finish(2, [](std::int64_t a, std::int64_t b) { return a < b; });
  CHECK(usage.files == 2);
  CHECK(std::filesystem::exists(store.path_of("trial-3-budget-1.h5")));
  CHECK(std::filesystem::exists(store.path_of("trial-4-budget-1.h5")));
  CHECK_FALSE(std::filesystem::exists(store.path_of("trial-5-budget-1.h5")));
  CHECK_FALSE(std::filesystem::exists(store.path_of("trial-8-budget-1.h5.part")));
  CHECK(usage.deleted == 1 + 3 + 1);  // 0.5 replaced; 5, 6, 7 at the end; the 1-budget-1 file too
}

TEST_CASE("at the end the store keeps best.json's trial too, though it reached a lower budget than the best few") {
  LocalStore local;
  auto& store = local.store;
  auto make = [&](const std::string& name) { return local.make(name); };
  store.record(1, make("trial-1-budget-1.h5"), 1);  // the best report, stopped at budget 1
  for (int t = 2; t <= 4; ++t) store.record(t, make("trial-" + std::to_string(t) + "-budget-9.h5"), 9);
  const auto usage = store.finish(2, [](std::int64_t a, std::int64_t b) { return a < b; }, 1);
  CHECK(usage.files == 3);
  CHECK(std::filesystem::exists(store.path_of("trial-1-budget-1.h5")));
  CHECK(std::filesystem::exists(store.path_of("trial-2-budget-9.h5")));
  CHECK(std::filesystem::exists(store.path_of("trial-3-budget-9.h5")));
  CHECK_FALSE(std::filesystem::exists(store.path_of("trial-4-budget-9.h5")));
}

TEST_CASE("the store verifies uploads off the loop: a stalled verification holds up no other transfer") {
  TempDir driver_dir, actor_dir;
  std::mutex mutex;
  std::condition_variable released_cv;
  bool released = false;
  std::atomic<int> stalled_in_verify{0};
  // The hostile file's verification hangs until the test lets it go (a damaged HDF5 file can
  // hold verify_checkpoint for its whole timeout).
  auto verify = [&](const std::string& path) {
    if (path.find("trial-1-") == std::string::npos) return;
    ++stalled_in_verify;
    std::unique_lock<std::mutex> lock(mutex);
    released_cv.wait(lock, [&] { return released; });
  };
  DriverSide driver(driver_dir.file("checkpoints"), {}, verify);
  // Declared after the store: lets the verification go before the store waits for it.
  struct Release {
    std::mutex& mutex;
    std::condition_variable& cv;
    bool& released;
    void operator()() {
      {
        std::lock_guard<std::mutex> lock(mutex);
        released = true;
      }
      cv.notify_all();
    }
    ~Release() { (*this)(); }
  } release{mutex, released_cv, released};
  actor_process::TransferClient client(driver.endpoint, nullptr, {});

  const auto hostile = actor_dir.file("trial-1-budget-1.h5");
  const auto honest = actor_dir.file("trial-2-budget-1.h5");
  write_file(hostile, "CKPT" + random_bytes(50'000, 8));
  write_file(honest, "CKPT" + random_bytes(50'000, 9));
  auto stalled = client.upload(hostile, "trial-1-budget-1.h5");
  driver.serve_while([&] { return stalled_in_verify == 0; });
  REQUIRE(stalled_in_verify == 1);
  CHECK(driver.store.verifying() == 1);

  auto other = client.upload(honest, "trial-2-budget-1.h5");
  driver.serve_until(other);
  CHECK(other.get() == driver.store.dir() + "/trial-2-budget-1.h5");
  auto back = client.fetch("trial-2-budget-1.h5", actor_dir.file("back.h5"));
  driver.serve_until(back);
  CHECK(read_file(back.get()) == read_file(honest));
  CHECK(stalled.wait_for(std::chrono::seconds(0)) != std::future_status::ready);
  CHECK_FALSE(std::filesystem::exists(driver.store.dir() + "/trial-1-budget-1.h5"));

  release();
  driver.serve_until(stalled);
  CHECK(stalled.get() == driver.store.dir() + "/trial-1-budget-1.h5");
  CHECK(driver.store.verifying() == 0);
}

TEST_CASE("the store writes no more of an upload than its offer declared") {
  TempDir driver_dir;
  DriverSide driver(driver_dir.file("checkpoints"), {}, {});
  zmq::socket_t peer(driver.context, zmq::socket_type::dealer);
  peer.set(zmq::sockopt::linger, 0);
  peer.connect(driver.endpoint);
  send_message(peer, protocol::Offer{5, "trial-0-budget-20.h5", 10, ""});
  std::optional<protocol::Stored> stored;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!stored && std::chrono::steady_clock::now() < deadline) {
    while (auto routed = RouterInbox().receive(driver.router, 10)) driver.store.handle(driver.router, *routed);
    driver.store.tick(driver.router);
    while (auto received = receive_with_payload(peer, 0)) {
      if (auto* fetch = std::get_if<protocol::FetchChunk>(&received->message)) {
        // It streams on: a whole chunk of a file of 1 GiB.
        zmq::message_t data(fetch->length);
        std::memset(data.data(), 'x', data.size());
        send_message(peer, protocol::Chunk{fetch->transfer, fetch->offset, std::uint64_t{1} << 30, ""}, data);
      } else if (auto* s = std::get_if<protocol::Stored>(&received->message)) {
        stored = *s;
      }
    }
  }
  REQUIRE(stored);
  CHECK_THAT(stored->error, Catch::Contains("offered as 10 bytes"));
  CHECK(driver.store.usage().files == 0);
  CHECK_FALSE(std::filesystem::exists(driver.store.dir() + "/trial-0-budget-20.h5.part"));
  CHECK(driver.store.bytes_received() == 0);
}

TEST_CASE("a file recorded again is held once, as the newest, and never deleted by its own record") {
  TempDir dir;
  CheckpointStore store(dir.file("checkpoints"), {}, {});
  auto make = [&](const std::string& name) {
    write_file(store.path_of(name), "x");
    return store.path_of(name);
  };
  for (const bool keep_all : {false, true}) {
    store.set_keep_all(keep_all);
    const auto trial = keep_all ? 2 : 1;
    const auto prefix = "trial-" + std::to_string(trial) + "-budget-";
    store.record(trial, make(prefix + "0.5.h5"), 0.5);
    store.record(trial, make(prefix + "1.h5"), 1);
    // Population-based training's exploit writes the member's file at 1 again: its donor's.
    store.record(trial, make(prefix + "1.h5"), 1);
    CHECK(std::filesystem::exists(store.path_of(prefix + "1.h5")));
    CHECK(store.newest_budget(trial) == 1);
    const auto held = store.newest_first(trial);
    CHECK(held.front() == store.path_of(prefix + "1.h5"));
    CHECK(held.size() == (keep_all ? 2u : 1u));
  }
}
