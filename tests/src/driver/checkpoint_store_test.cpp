#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "../../file_bytes.hpp"
#include "../../temp_dir.hpp"
#include "actor/transfer_client.hpp"
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

  // Serves until `ready` says the future is there, or 20 s passed.
  template <class Future>
  void serve_until(Future& future) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (future.wait_for(std::chrono::seconds(0)) != std::future_status::ready &&
           std::chrono::steady_clock::now() < deadline) {
      while (auto routed = receive_routed(router, 10)) {
        store.handle(router, *routed);
      }
      store.tick(router);
    }
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
  int verified = 0;
  auto verify = [&verified](const std::string& path) {
    ++verified;
    if (read_file(path).rfind("CKPT", 0) != 0) throw InputError(path + ": not a checkpoint");
  };
  DriverSide driver(driver_dir.file("checkpoints"), options, verify);
  TransferClient client(driver.endpoint, nullptr, options, verify);

  const auto bytes = "CKPT" + random_bytes(100'000, 4);
  const auto local = actor_dir.file("trial-1-budget-0.5.h5");
  std::ofstream(local, std::ios::binary) << bytes;

  auto stored = client.upload(local, "trial-1-budget-0.5.h5");
  driver.serve_until(stored);
  const auto path = stored.get();
  CHECK(path == driver.store.dir() + "/trial-1-budget-0.5.h5");
  CHECK(read_file(path) == bytes);
  CHECK(driver.store.bytes_received() == static_cast<std::int64_t>(bytes.size()));

  auto fetched = client.fetch("trial-1-budget-0.5.h5", actor_dir.file("back.h5"));
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
