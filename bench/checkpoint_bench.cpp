// Saving and loading a ~100 MB trial checkpoint (an MLP's parameters and SGD momentum)
// against the disk's own sequential bandwidth, measured in the same run on the same folder,
// and moving it over ZeroMQ on tcp loopback (an actor without the driver's file system)
// against a plain ZeroMQ stream of the same bytes:
//   build/bench/checkpoint_bench [DIR]        (default: the system temp folder)
// Cold reads drop the files from the page cache first (posix_fadvise), so they hit the disk.
// The figures that matter are the ratios; each is the best of three tries.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <torch/torch.h>

#include "actor_process/transfer_client.hpp"
#include "actors/checkpoint_file.hpp"
#include "actors/fused_group.hpp"
#include "actors/memory_profile.hpp"
#include "datasets/batch_stream.hpp"
#include "driver/checkpoint_store.hpp"
#include "protocol/zmq_channel.hpp"
#include "spec/trial_spec.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using packtune::actors::TrialCheckpoint;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

void drop_cache(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// write + fsync of `bytes` in 8 MiB pieces: what the disk takes sequentially.
double raw_write(const std::string& path, const std::vector<char>& piece, std::int64_t bytes) {
  const auto start = Clock::now();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw std::runtime_error("cannot create " + path);
  for (std::int64_t done = 0; done < bytes;) {
    const auto n = ::write(fd, piece.data(), static_cast<std::size_t>(std::min<std::int64_t>(piece.size(), bytes - done)));
    if (n <= 0) throw std::runtime_error("cannot write " + path);
    done += n;
  }
  ::fsync(fd);
  ::close(fd);
  return seconds_since(start);
}

double raw_read(const std::string& path, std::vector<char>& piece) {
  drop_cache(path);
  const auto start = Clock::now();
  const int fd = ::open(path.c_str(), O_RDONLY);
  while (::read(fd, piece.data(), piece.size()) > 0) {
  }
  ::close(fd);
  return seconds_since(start);
}

// A plain ZeroMQ stream: `bytes` in frames of `frame` bytes from a DEALER to a ROUTER over tcp
// loopback, as fast as the socket takes them, one thread each way.
double raw_stream(std::int64_t bytes, std::size_t frame) {
  zmq::context_t context(1);
  zmq::socket_t router(context, zmq::socket_type::router);
  router.bind("tcp://127.0.0.1:*");
  const std::string endpoint = router.get(zmq::sockopt::last_endpoint);
  const auto start = Clock::now();
  std::thread sender([&] {
    zmq::socket_t dealer(context, zmq::socket_type::dealer);
    dealer.set(zmq::sockopt::linger, -1);
    dealer.connect(endpoint);
    std::vector<char> piece(frame, 'x');
    for (std::int64_t sent = 0; sent < bytes; sent += static_cast<std::int64_t>(frame)) {
      dealer.send(zmq::buffer(piece.data(), std::min<std::int64_t>(frame, bytes - sent)), zmq::send_flags::none);
    }
  });
  std::int64_t received = 0;
  while (received < bytes) {
    zmq::message_t identity, data;
    (void)router.recv(identity);
    (void)router.recv(data);
    received += static_cast<std::int64_t>(data.size());
  }
  const double s = seconds_since(start);
  sender.join();
  return s;
}

// The file at `store_dir/name` pulled by an actor's TransferClient from a driver's
// CheckpointStore over tcp loopback (fetch), or offered by the actor and pulled into the store
// (upload). Verification is left out: this is the transfer alone. The store fsyncs what it
// pulls (its acknowledgement lets the actor delete its copy), so an upload is bounded by the
// disk's write rate too.
double transfer(const std::string& store_dir, const std::string& actor_dir, const std::string& name, bool upload) {
  using namespace packtune;
  zmq::context_t context(1);
  zmq::socket_t router(context, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  router.bind("tcp://127.0.0.1:*");
  const std::string endpoint = router.get(zmq::sockopt::last_endpoint);
  const std::string into = upload ? store_dir + "/in" : store_dir;
  CheckpointStore store(into, TransferOptions{}, {});
  actor_process::TransferClient client(endpoint, nullptr, TransferOptions{});
  const auto start = Clock::now();
  auto done = upload ? client.upload(actor_dir + "/" + name, name) : client.fetch(name, actor_dir + "/fetched.h5");
  while (done.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    while (auto routed = RouterInbox().receive(router, 1)) {
      store.handle(router, *routed);
    }
    store.tick(router);
  }
  const double s = seconds_since(start);
  // Each try writes a new file: ext4 flushes a file renamed over an existing one at once
  // (auto_da_alloc), which would time the disk, not the transfer.
  std::filesystem::remove(done.get());
  return s;
}

template <class F>
double best_of_three(F f) {
  double best = 1e300;
  for (int i = 0; i < 3; ++i) best = std::min(best, f());
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  const fs::path dir = argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path() / ("checkpoint-bench-" + std::to_string(getpid()));
  fs::create_directories(dir);
  torch::set_num_threads(1);

  // 784 -> 3072 -> 3072 -> 10 with SGD momentum: 11.9 M parameters, 95 MB with the buffers.
  packtune::datasets::BatchStream stream(packtune::actors::synthetic_split({1, 28, 28, 10}, 16, 16), torch::kCPU, 1);
  const auto spec = packtune::spec::parse_trial_spec(
      {{"depth", std::int64_t{2}}, {"width", std::int64_t{3072}}, {"optimizer", std::string("sgd")},
       {"momentum", 0.9}, {"batch_size", std::int64_t{16}}});
  packtune::actors::FusedGroup runner(spec, {1, 28, 28, 10}, torch::kCPU);
  runner.add(0, spec, 42);
  runner.train_step(stream);  // so the momentum buffers exist

  TrialCheckpoint checkpoint;
  const double copy = best_of_three([&] {
    TrialCheckpoint c;
    const auto start = Clock::now();
    runner.capture(0, c);
    const double s = seconds_since(start);
    checkpoint = c;
    return s;
  });
  checkpoint.trial = 0;
  checkpoint.budget = 1;
  const auto bytes = checkpoint.bytes();
  const double mb = static_cast<double>(bytes) / 1e6;
  const auto path = (dir / "trial-0-budget-1.h5").string();

  const double save = best_of_three([&] {
    const auto start = Clock::now();
    packtune::actors::write_checkpoint(path, checkpoint);
    return seconds_since(start);
  });
  const double file_mb = static_cast<double>(fs::file_size(path)) / 1e6;
  const double load_cold = best_of_three([&] {
    drop_cache(path);
    const auto start = Clock::now();
    auto c = packtune::actors::read_checkpoint(path);
    return seconds_since(start);
  });
  const double load_warm = best_of_three([&] {
    const auto start = Clock::now();
    auto c = packtune::actors::read_checkpoint(path);
    return seconds_since(start);
  });
  // What a restore costs the actor: the trial's model built and filled from the checkpoint.
  const double restore = best_of_three([&] {
    const auto start = Clock::now();
    packtune::actors::FusedGroup restored(spec, {1, 28, 28, 10}, torch::kCPU);
    restored.add(0, spec, 42, &checkpoint);
    return seconds_since(start);
  });

  std::vector<char> piece(8 << 20, 'x');
  const auto raw = (dir / "raw.bin").string();
  const double disk_write = best_of_three([&] { return raw_write(raw, piece, bytes); });
  const double disk_read = best_of_three([&] { return raw_read(raw, piece); });

  // Both transfers read the file through the page cache: the network path is what is timed.
  fs::create_directories(dir / "actor");
  fs::copy_file(path, dir / "actor" / "trial-0-budget-1.h5", fs::copy_options::overwrite_existing);
  const auto file_bytes = static_cast<std::int64_t>(fs::file_size(path));
  const double plain = best_of_three([&] { return raw_stream(file_bytes, 1 << 20); });
  const double fetch = best_of_three([&] { return transfer(dir.string(), (dir / "actor").string(), "trial-0-budget-1.h5", false); });
  const double upload = best_of_three([&] { return transfer(dir.string(), (dir / "actor").string(), "trial-0-budget-1.h5", true); });
  const double verify = best_of_three([&] {
    const auto start = Clock::now();
    packtune::actors::read_checkpoint(path);
    return seconds_since(start);
  });

  const double w = mb / disk_write, r = mb / disk_read;
  std::printf("checkpoint of %.1f MB tensors (file %.1f MB) in %s\n", mb, file_mb, dir.c_str());
  std::printf("  disk, sequential:   write+fsync %7.0f MB/s   read (cold) %7.0f MB/s\n", w, r);
  std::printf("  copy to host:       %7.3f s  (%6.0f MB/s) -- all a save stalls training for\n", copy, mb / copy);
  std::printf("  save (write+fsync): %7.3f s  (%6.0f MB/s)  %.2fx the disk's write\n", save, mb / save, (mb / save) / w);
  std::printf("  load, cold:         %7.3f s  (%6.0f MB/s)  %.2fx the disk's read\n", load_cold, mb / load_cold,
              (mb / load_cold) / r);
  std::printf("  load, page cache:   %7.3f s  (%6.0f MB/s)\n", load_warm, mb / load_warm);
  std::printf("  restore into model: %7.3f s\n", restore);
  const double fmb = static_cast<double>(file_bytes) / 1e6;
  std::printf("  over ZeroMQ, tcp loopback, %.1f MB file:\n", fmb);
  std::printf("    plain stream:     %7.3f s  (%6.0f MB/s)\n", plain, fmb / plain);
  std::printf("    fetch (resume):   %7.3f s  (%6.0f MB/s)  %.2fx the stream\n", fetch, fmb / fetch, plain / fetch);
  std::printf("    upload (to store):%7.3f s  (%6.0f MB/s)  %.2fx the stream, with the store's fsync\n", upload,
              fmb / upload, plain / upload);
  std::printf("    + verifying it:   %7.3f s  (the checksums, read from the page cache)\n", verify);
  std::printf("{\"transfer_file_bytes\": %lld, \"stream_mbps\": %.0f, \"fetch_mbps\": %.0f, \"upload_mbps\": %.0f, "
              "\"fetch_vs_stream\": %.3f, \"upload_vs_stream\": %.3f, \"verify_s\": %.4f}\n",
              static_cast<long long>(file_bytes), fmb / plain, fmb / fetch, fmb / upload, plain / fetch,
              plain / upload, verify);
  std::printf("{\"bytes\": %lld, \"disk_write_mbps\": %.0f, \"disk_read_mbps\": %.0f, \"copy_s\": %.4f, "
              "\"save_s\": %.4f, \"load_cold_s\": %.4f, \"load_warm_s\": %.4f, \"restore_s\": %.4f, "
              "\"save_vs_disk\": %.3f, \"load_vs_disk\": %.3f}\n",
              static_cast<long long>(bytes), w, r, copy, save, load_cold, load_warm, restore, (mb / save) / w,
              (mb / load_cold) / r);
  std::error_code ec;
  if (argc <= 1) fs::remove_all(dir, ec);
  return 0;
}
