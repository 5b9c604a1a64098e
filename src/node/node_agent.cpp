#include "node/node_agent.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <set>
#include <thread>

#include <fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <zmq.hpp>

#include "node/actor_supervisor.hpp"
#include "node/node_relay.hpp"
#include "packtune/error.hpp"
#include "protocol/curve_keys.hpp"
#include "protocol/zmq_channel.hpp"
#include "util/host_name.hpp"
#include "util/work_folder.hpp"

namespace packtune {
namespace {

using Clock = std::chrono::steady_clock;
namespace proto = protocol;

std::atomic<int> caught_signal{0};
extern "C" void on_node_signal(int signal) { caught_signal = signal; }

std::string trim(const std::string& text) {
  const auto begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return text.substr(begin, text.find_last_not_of(" \t\r\n") - begin + 1);
}

// Every field, empty ones included ("0," is two).
std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::size_t begin = 0;
  for (auto end = text.find(separator); end != std::string::npos; end = text.find(separator, begin)) {
    out.push_back(trim(text.substr(begin, end - begin)));
    begin = end + 1;
  }
  out.push_back(trim(text.substr(begin)));
  return out;
}

// nvidia-smi's view of the GPUs, one {index, uuid, name, MiB} per line; empty without it.
std::vector<std::vector<std::string>> query_gpus() {
  std::vector<std::vector<std::string>> rows;
  FILE* pipe = popen("nvidia-smi --query-gpu=index,uuid,name,memory.total --format=csv,noheader,nounits "
                     "2>/dev/null",
                     "r");
  if (!pipe) return rows;
  char line[512];
  while (std::fgets(line, sizeof line, pipe)) {
    auto fields = split(line, ',');
    if (fields.size() == 4) rows.push_back(fields);
  }
  pclose(pipe);
  return rows;
}

class NodeAgent {
 public:
  explicit NodeAgent(NodeOptions options)
      : options_(std::move(options)), context_(1), relay_(make_relay(context_, options_)),
        socket_(context_, zmq::socket_type::dealer) {
    // The agent speaks to the driver as its actors do, through the relay: one connection.
    socket_.set(zmq::sockopt::linger, 1000);
    limit_frames(socket_);
    socket_.connect(NodeRelay::kAgentEndpoint);
  }

  int run() {
    const int slots = options_.gpus.empty() ? options_.actors : static_cast<int>(options_.gpus.size());
    hello_ = describe_machine(options_.gpus, slots);
    register_with_driver(hello_);
    const bool own_work_dir = options_.work_dir.empty();
    const std::string work_dir = own_work_dir ? util::fresh_work_dir("node") : options_.work_dir;
    SupervisorOptions supervision;
    supervision.log_dir = options_.log_dir.empty() ? work_dir + "/logs" : options_.log_dir;
    supervision.max_restarts = options_.max_restarts;
    supervisor_ = std::make_unique<ActorSupervisor>(supervision);

    const int cores = std::max(1u, std::thread::hardware_concurrency());
    const int threads = options_.threads > 0 ? options_.threads : std::max(1, cores / std::max(1, slots));
    for (int i = 0; i < slots; ++i) {
      // The hop to the relay stays on this machine: no keys (node_relay.hpp).
      auto command = actor_command(relay_->actor_endpoint(), node_id_, i, threads, work_dir, "");
      if (!options_.gpus.empty()) command.env.push_back({"CUDA_VISIBLE_DEVICES", options_.gpus[i]});
      supervisor_->start(std::move(command));
    }
    spdlog::info("node {}: {} actor(s){}, {} thread(s) each; logs in {}", node_id_, slots,
                 options_.gpus.empty() ? " on the CPU" : " one per GPU", threads, supervision.log_dir);

    auto previous_int = std::signal(SIGINT, on_node_signal);
    auto previous_term = std::signal(SIGTERM, on_node_signal);
    int code = 1;
    try {
      code = serve();
    } catch (...) {
      stop(0.5, SIGKILL);
      std::signal(SIGINT, previous_int);
      std::signal(SIGTERM, previous_term);
      if (own_work_dir) remove_own_work_dir(work_dir, slots);
      throw;
    }
    std::signal(SIGINT, previous_int);
    std::signal(SIGTERM, previous_term);
    if (own_work_dir) remove_own_work_dir(work_dir, slots);
    spdlog::info("node {}: its relay kept {} heartbeat(s) of its actors on this machine and dropped {} message(s)",
                 node_id_, relay_->heartbeats_kept(), relay_->dropped());
    return code;
  }

 private:
  static std::unique_ptr<NodeRelay> make_relay(zmq::context_t& context, const NodeOptions& options) {
    std::unique_ptr<CurveKeys> keys;
    if (!options.keys.empty()) keys = std::make_unique<CurveKeys>(load_actor_keys(options.keys));
    return std::make_unique<NodeRelay>(context, options.driver, keys.get());
  }

  // The actors' folders go; the logs stay for reading, and the folder itself goes only when
  // nothing is left in it (an empty packtune-node-PID per node run piled up in /tmp).
  static void remove_own_work_dir(const std::string& work_dir, int slots) {
    std::error_code ec;
    for (int i = 0; i < slots; ++i) std::filesystem::remove_all(work_dir + "/actor-" + std::to_string(i), ec);
    std::filesystem::remove(work_dir + "/logs", ec);  // only if empty
    std::filesystem::remove(work_dir, ec);            // only if empty
  }

  void register_with_driver(const proto::NodeHello& hello) {
    const auto welcome = join_driver<proto::NodeWelcome>(socket_, hello, options_.driver,
                                                         options_.connect_timeout_seconds, "node");
    node_id_ = welcome.node_id;
    hello_.node_id = node_id_;
    heartbeat_ = std::chrono::duration<double>(welcome.heartbeat_seconds);
    relay_->set_timing(welcome.heartbeat_seconds, welcome.actor_timeout_seconds);
    spdlog::info("node {}: registered with the driver at {} ({} core(s), {} MiB, {} GPU(s))", node_id_,
                 options_.driver, hello.cores, hello.memory_bytes >> 20, hello.devices.size());
  }

  int serve() {
    auto last_heard = Clock::now();
    auto last_sent = Clock::now();
    const auto driver_timeout = std::chrono::duration<double>(options_.driver_timeout_seconds);
    while (true) {
      if (const int signal = caught_signal.load()) {
        spdlog::warn("node {}: signal {}; stopping its actors", node_id_, signal);
        stop(2, SIGTERM);
        return 128 + signal;
      }
      if (auto message = receive(50)) {
        last_heard = Clock::now();
        if (std::holds_alternative<proto::Shutdown>(*message)) {
          spdlog::info("node {}: shutdown by the driver; waiting for its actors to exit", node_id_);
          stop(options_.shutdown_grace_seconds, 0);
          return 0;
        }
        if (auto* rejoin = std::get_if<proto::Rejoin>(&*message)) {
          // A driver resumed after a kill: the node asks for its old id, which its actors'
          // Hello says; they rejoin on their own.
          spdlog::warn("node {}: the driver asks it to join again ({})", node_id_, rejoin->reason);
          rejoining_ = true;
          send_message(socket_, hello_);
        } else if (std::holds_alternative<proto::NodeWelcome>(*message) && !rejoining_) {
          // The answer to a Hello said again while the first answer was on its way (hello_driver).
        } else if (auto* welcome = std::get_if<proto::NodeWelcome>(&*message)) {
          rejoining_ = false;
          if (welcome->node_id != node_id_) {
            spdlog::warn("node {}: joined again as node {}; its actors still say node {}, so the driver hears of "
                         "their exits only when they go silent", node_id_, welcome->node_id, node_id_);
          } else {
            spdlog::info("node {}: joined the driver again", node_id_);
          }
          node_id_ = welcome->node_id;
          heartbeat_ = std::chrono::duration<double>(welcome->heartbeat_seconds);
          relay_->set_timing(welcome->heartbeat_seconds, welcome->actor_timeout_seconds);
        } else if (auto* reject = std::get_if<proto::Reject>(&*message)) {
          throw Error("the driver refused this node: " + reject->reason);
        } else if (auto* hung = std::get_if<proto::KillActor>(&*message)) {
          // The exit it causes goes to the driver as any other, and the slot restarts.
          supervisor_->kill_hung(hung->local_index, hung->pid, hung->reason);
        } else if (!std::holds_alternative<proto::Heartbeat>(*message)) {
          spdlog::warn("node {}: unexpected {} from the driver", node_id_, proto::verb(*message));
        }
      }
      const auto events = supervisor_->poll();
      report(events);
      for (const auto& e : events) {
        if (e.kind == SupervisorEvent::Kind::Exited && e.clean) {
          shut_down_.insert(e.local_index);
        }
      }
      if (supervisor_->slots() > 0 && static_cast<int>(shut_down_.size()) == supervisor_->slots()) {
        // The driver shut every actor down: the experiment is over, though the node's own
        // Shutdown may never come (a resumed driver that ended before this node rejoined it).
        spdlog::info("node {}: the driver shut down every actor; the node stops", node_id_);
        stop(options_.shutdown_grace_seconds, 0);
        return 0;
      }
      if (supervisor_->slots() > 0 && gave_up_slots() == supervisor_->slots()) {
        spdlog::error("node {}: every actor was given up; see the logs in {}", node_id_,
                      std::filesystem::path(supervisor_->log_path(0)).parent_path().string());
        return 1;
      }
      const auto now = Clock::now();
      if (now - last_heard > driver_timeout) {
        spdlog::error("node {}: no message from the driver for {:g} s; stopping its actors", node_id_,
                      options_.driver_timeout_seconds);
        stop(2, SIGTERM);
        return 1;
      }
      if (now - last_sent >= heartbeat_) {
        send_message(socket_, proto::Heartbeat{});
        last_sent = now;
      }
    }
  }

  // A signal that interrupts the wait is handled by the loop.
  std::optional<proto::Message> receive(long timeout_ms) {
    try {
      return receive_message(socket_, timeout_ms);
    } catch (const zmq::error_t& e) {
      if (e.num() == EINTR) return std::nullopt;
      throw;
    }
  }

  // Tells the driver about every process that ended, so it retires that actor at once.
  void report(const std::vector<SupervisorEvent>& events) {
    for (const auto& e : events) {
      if (e.kind != SupervisorEvent::Kind::Exited) continue;
      send_message(socket_, proto::ActorExited{e.local_index, e.pid, e.how, e.restarting, e.input_error});
    }
  }

  void stop(double grace_seconds, int signal) { report(supervisor_->stop(grace_seconds, signal)); }

  int gave_up_slots() const {
    int n = 0;
    for (int i = 0; i < supervisor_->slots(); ++i) n += supervisor_->gave_up(i);
    return n;
  }

  NodeOptions options_;
  zmq::context_t context_;
  std::unique_ptr<NodeRelay> relay_;  // after the context, before the agent's socket: closed after it
  zmq::socket_t socket_;
  std::unique_ptr<ActorSupervisor> supervisor_;
  int node_id_ = -1;
  proto::NodeHello hello_;  // said again when a resumed driver asks (Rejoin)
  bool rejoining_ = false;  // said hello_ again on a Rejoin: its NodeWelcome is awaited
  std::set<int> shut_down_;  // slots whose actor exited with code 0: the driver shut it down
  std::chrono::duration<double> heartbeat_{1.0};
};

}  // namespace

std::vector<std::string> node_gpus(const std::string& flag, const char* visible) {
  const bool from_flag = !flag.empty();
  const std::string text = from_flag ? flag : visible ? trim(visible) : "";
  if (text.empty()) return {};
  const auto gpus = split(text, ',');
  for (const auto& gpu : gpus) {
    if (gpu.empty()) {
      throw InputError(std::string(from_flag ? "--gpus" : "CUDA_VISIBLE_DEVICES") + ": \"" + text +
                       "\" has an empty entry; expected GPU indices or UUIDs separated by commas, e.g. 0,2");
    }
  }
  return gpus;
}

proto::NodeHello describe_machine(const std::vector<std::string>& gpus, int actors) {
  return describe_machine(gpus, actors, gpus.empty() ? std::vector<std::vector<std::string>>{} : query_gpus());
}

proto::NodeHello describe_machine(const std::vector<std::string>& gpus, int actors,
                                  const std::vector<std::vector<std::string>>& known) {
  proto::NodeHello hello;
  hello.host = util::host_name();
  hello.pid = getpid();
  hello.cores = static_cast<std::int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  hello.memory_bytes = static_cast<std::int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE);
  hello.actors = actors;
  if (!gpus.empty() && known.empty()) {
    spdlog::warn("nvidia-smi lists no GPU here: the GPUs {} cannot be checked, and actors that find none train "
                 "on the CPU unless the config says \"device\": \"cuda\"", fmt::join(gpus, ","));
  }
  for (const auto& gpu : gpus) {
    proto::NodeDevice device{gpu, 0};
    const auto row = std::find_if(known.begin(), known.end(),
                                  [&](const std::vector<std::string>& r) { return r[0] == gpu || r[1] == gpu; });
    if (row != known.end()) {
      device.name = (*row)[2];
      try {
        device.memory_bytes = std::stoll((*row)[3]) << 20;
      } catch (const std::exception&) {
        device.memory_bytes = 0;  // "[N/A]" on some boards
      }
    } else if (!known.empty()) {
      std::string indices;
      for (const auto& r : known) indices += (indices.empty() ? "" : ", ") + r[0];
      throw InputError("--gpus: GPU " + gpu + " is not one nvidia-smi lists here (" + indices + ")");
    }
    hello.devices.push_back(device);
  }
  return hello;
}

int run_node(const NodeOptions& options) {
  NodeAgent node(options);
  return node.run();
}

}  // namespace packtune
