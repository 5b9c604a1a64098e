#include "actor_process/transfer_client.hpp"

#include <filesystem>
#include <random>

#include "packtune/error.hpp"
#include "protocol/interrupted.hpp"
#include "protocol/zmq_channel.hpp"

namespace packtune::actor_process {
namespace {

using Clock = std::chrono::steady_clock;

std::string wake_endpoint(const void* self) {
  return "inproc://packtune-transfer-" + std::to_string(reinterpret_cast<std::uintptr_t>(self));
}

}  // namespace

TransferClient::TransferClient(const std::string& driver, const CurveKeys* keys, TransferOptions options)
    : options_(options), context_(1), socket_(context_, zmq::socket_type::dealer),
      wake_in_(context_, zmq::socket_type::pair), wake_out_(context_, zmq::socket_type::pair),
      next_transfer_(std::random_device{}() | (std::uint64_t{std::random_device{}()} << 32)) {
  socket_.set(zmq::sockopt::linger, 0);
  limit_frames(socket_);
  if (keys) use_curve_client(socket_, *keys);
  socket_.connect(driver);
  wake_in_.bind(wake_endpoint(this));
  wake_out_.connect(wake_endpoint(this));
  thread_ = std::thread([this] { run(); });
}

TransferClient::~TransferClient() {
  stop_ = true;
  wake();
  thread_.join();
  // Whoever still waits learns that nothing will come.
  for (auto& [id, f] : fetches_) f.done.set_exception(std::make_exception_ptr(Error("the actor is stopping")));
  for (auto& [id, u] : uploads_) u.done.set_exception(std::make_exception_ptr(Error("the actor is stopping")));
  for (auto& r : requests_) r.done.set_exception(std::make_exception_ptr(Error("the actor is stopping")));
}

void TransferClient::wake() {
  std::lock_guard<std::mutex> lock(mutex_);
  wake_out_.send(zmq::message_t(), zmq::send_flags::dontwait);
}

void TransferClient::set_token(const std::string& token) {
  std::lock_guard<std::mutex> lock(mutex_);
  token_ = token;
}

std::string TransferClient::token() {
  std::lock_guard<std::mutex> lock(mutex_);
  return token_;
}

std::future<std::string> TransferClient::fetch(const std::string& name, const std::string& local_path,
                                               ChunkFetcher::Verify verify) {
  Request r{false, name, local_path, {}, std::move(verify)};
  auto future = r.done.get_future();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    requests_.push_back(std::move(r));
  }
  wake();
  return future;
}

std::future<std::string> TransferClient::upload(const std::string& local_path, const std::string& name) {
  Request r{true, name, local_path, {}, {}};
  auto future = r.done.get_future();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    requests_.push_back(std::move(r));
  }
  wake();
  return future;
}

void TransferClient::start(Request& request) {
  const auto id = next_transfer_++;
  if (!request.upload) {
    Fetch f{std::make_unique<ChunkFetcher>(id, request.name, request.local_path, options_, std::move(request.verify)),
            std::move(request.done)};
    auto& stored = fetches_[id] = std::move(f);
    send_requests(stored);
    return;
  }
  std::error_code ec;
  const auto size = std::filesystem::file_size(request.local_path, ec);
  if (ec) {
    request.done.set_exception(std::make_exception_ptr(Error("cannot offer " + request.local_path + ": " + ec.message())));
    return;
  }
  uploads_[id] = Upload{request.local_path, request.name, std::move(request.done), Clock::now()};
  send_message(socket_, protocol::Offer{id, request.name, size, token()});
}

void TransferClient::send_requests(Fetch& fetch) {
  const auto secret = token();
  for (auto& r : fetch.fetcher->take_requests()) {
    r.token = secret;
    send_message(socket_, r);
  }
}

void TransferClient::run() {
  zmq::pollitem_t items[] = {{static_cast<void*>(socket_), 0, ZMQ_POLLIN, 0},
                             {static_cast<void*>(wake_in_), 0, ZMQ_POLLIN, 0}};
  while (!stop_) {
    const bool busy = !fetches_.empty() || !uploads_.empty();
    protocol::retry_interrupted([&] { return zmq::poll(items, 2, std::chrono::milliseconds(busy ? 200 : -1)); });
    if (items[1].revents & ZMQ_POLLIN) {
      zmq::message_t m;
      while (wake_in_.recv(m, zmq::recv_flags::dontwait)) {
      }
      std::vector<Request> fresh;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        fresh.swap(requests_);
      }
      for (auto& r : fresh) start(r);
    }
    while (true) {
      std::optional<Received> received;
      try {
        received = receive_with_payload(socket_, 0);
      } catch (const Error&) {
        continue;  // a malformed message from the driver: the transfer it belonged to times out
      }
      if (!received) break;
      on_message(*received);
    }
    tick();
  }
}

void TransferClient::on_message(Received& received) {
  if (auto* chunk = std::get_if<protocol::Chunk>(&received.message)) {
    auto it = fetches_.find(chunk->transfer);
    if (it == fetches_.end()) return;
    it->second.fetcher->on_chunk(*chunk, received.payload.data(), received.payload.size());
    send_requests(it->second);
  } else if (auto* request = std::get_if<protocol::FetchChunk>(&received.message)) {
    // The driver pulls a file this actor offered; only those files are served.
    auto it = uploads_.find(request->transfer);
    protocol::Chunk refusal{request->transfer, request->offset, 0, "no such transfer"};
    if (it == uploads_.end() || it->second.name != request->name) {
      zmq::message_t none;
      send_message(socket_, refusal, none);
      return;
    }
    it->second.last_heard = Clock::now();
    const auto dir = std::filesystem::path(it->second.local_path).parent_path().string();
    auto [chunk, data] = serve_chunk(dir, *request, options_.chunk_bytes);
    send_message(socket_, chunk, data);
  } else if (auto* stored = std::get_if<protocol::Stored>(&received.message)) {
    auto it = uploads_.find(stored->transfer);
    if (it == uploads_.end()) return;
    if (stored->error.empty()) {
      it->second.done.set_value(stored->path);
    } else {
      it->second.done.set_exception(
          std::make_exception_ptr(Error("the driver could not store " + it->second.name + ": " + stored->error)));
    }
    uploads_.erase(it);
  }
}

void TransferClient::tick() {
  const auto now = Clock::now();
  for (auto it = fetches_.begin(); it != fetches_.end();) {
    auto& f = *it->second.fetcher;
    f.on_tick(now);
    send_requests(it->second);
    if (f.done()) {
      it->second.done.set_value(f.local_path());
    } else if (f.failed()) {
      it->second.done.set_exception(std::make_exception_ptr(Error("cannot fetch checkpoint " + f.error())));
    } else {
      ++it;
      continue;
    }
    it = fetches_.erase(it);
  }
  // A driver that never pulls an offered file (it restarted, or lost the Offer) must not
  // leave a save waiting forever.
  const auto limit = std::chrono::duration<double>(options_.quiet_seconds * options_.attempts);
  for (auto it = uploads_.begin(); it != uploads_.end();) {
    if (now - it->second.last_heard < limit) {
      ++it;
      continue;
    }
    it->second.done.set_exception(
        std::make_exception_ptr(Error("the driver did not take " + it->second.name + " in time")));
    it = uploads_.erase(it);
  }
}

}  // namespace packtune::actor_process
