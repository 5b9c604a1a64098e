#include "actor_process.hpp"

#include <unistd.h>

#include <chrono>
#include <thread>

#include <spdlog/spdlog.h>

#include "actors/device.hpp"
#include "actors/pack_executor.hpp"
#include "datasets/batch_stream.hpp"
#include "packtune/error.hpp"
#include "zmq_channel.hpp"

namespace packtune {
namespace {

using Clock = std::chrono::steady_clock;
namespace proto = protocol;

std::string host_name() {
  char buffer[256] = {};
  gethostname(buffer, sizeof buffer - 1);
  return buffer;
}

class Actor {
 public:
  explicit Actor(const ActorOptions& options)
      : options_(options), context_(1), socket_(context_, zmq::socket_type::dealer) {
    socket_.set(zmq::sockopt::linger, 1000);
    socket_.connect(options_.driver);
  }

  int run() {
    const int threads = options_.threads > 0 ? options_.threads
                                              : static_cast<int>(std::thread::hardware_concurrency());
    proto::Hello hello;
    hello.host = host_name();
    hello.pid = getpid();
    hello.local_index = options_.local_index;
    hello.threads = threads;
    send_message(socket_, hello);

    auto reply = receive_message(socket_, static_cast<long>(options_.connect_timeout_seconds * 1000));
    if (!reply) {
      throw Error("no driver answered at " + options_.driver + " within " +
                  std::to_string(static_cast<int>(options_.connect_timeout_seconds)) +
                  " s; is `packtune run` listening there?");
    }
    if (auto* reject = std::get_if<proto::Reject>(&*reply)) {
      throw Error("the driver refused this actor: " + reject->reason);
    }
    auto* welcome = std::get_if<proto::Welcome>(&*reply);
    if (!welcome) throw Error(std::string("expected Welcome from the driver, got ") + proto::verb(*reply));
    id_ = welcome->actor_id;
    spec_ = welcome->spec;
    spdlog::info("actor {}: connected to {} (pid {})", id_, options_.driver, hello.pid);

    std::unique_ptr<datasets::BatchStream> stream;
    std::string device;
    try {
      device = actors::resolve_device(spec_.device, options_.local_index >= 0 ? options_.local_index : id_);
      actors::configure_cpu_threads(threads);
      datasets::DataOptions data;
      data.name = spec_.data_name;
      data.dir = spec_.data_dir;
      data.train_size = spec_.train_size;
      data.validation_size = spec_.validation_size;
      const auto start = Clock::now();
      auto split = datasets::load_image_split(data);
      stream = std::make_unique<datasets::BatchStream>(split, torch::Device(device), spec_.data_seed);
      spdlog::info("actor {}: {} training and {} validation images on {} in {:.2f} s, {} threads",
                   id_, split.train.count, split.validation.count, device,
                   std::chrono::duration<double>(Clock::now() - start).count(), threads);
    } catch (const std::exception& e) {
      send_message(socket_, proto::ActorFailed{actors::error_message(e)});
      throw;
    }
    actors::PackExecutor pack(*stream, actors::parse_budget_unit(spec_.budget_unit), spec_.fuse);
    send_message(socket_, proto::Ready{device});
    return serve(pack);
  }

 private:
  int serve(actors::PackExecutor& pack) {
    const auto heartbeat = std::chrono::duration<double>(spec_.heartbeat_seconds);
    // The driver heartbeats too; silence this long means it is gone.
    const auto driver_timeout = std::max(std::chrono::duration<double>(30), heartbeat * 30);
    auto last_sent = Clock::now();
    auto last_heard = Clock::now();
    while (true) {
      while (auto message = receive_message(socket_, pack.empty() ? 100 : 0)) {
        last_heard = Clock::now();
        if (std::holds_alternative<proto::Shutdown>(*message)) {
          spdlog::info("actor {}: shutdown by the driver", id_);
          return 0;
        }
        if (auto* assign = std::get_if<proto::Assign>(&*message)) {
          start_trial(pack, *assign);
        } else if (auto* stop = std::get_if<proto::Stop>(&*message)) {
          pack.remove(stop->trial);
        }
        last_sent = Clock::now();  // replies above count as signs of life
      }
      if (!pack.empty()) {
        for (auto& event : pack.step_round()) {
          if (!event.error.empty()) {
            spdlog::warn("actor {}: trial {} failed: {}", id_, event.trial, event.error);
            send_message(socket_, proto::TrialFailed{event.trial, event.error});
          } else {
            send_message(socket_, proto::Report{event.trial, event.budget, event.metrics,
                                                event.final, event.train_seconds});
          }
          last_sent = Clock::now();
        }
      }
      const auto now = Clock::now();
      if (now - last_sent >= heartbeat) {
        send_message(socket_, proto::Heartbeat{});
        last_sent = now;
      }
      if (now - last_heard > driver_timeout) {
        throw Error("the driver at " + options_.driver + " went silent; stopping this actor");
      }
    }
  }

  void start_trial(actors::PackExecutor& pack, const proto::Assign& assign) {
    try {
      actors::PackJob job;
      job.trial = assign.trial;
      job.spec = actors::parse_trial_spec(assign.config, "trial " + std::to_string(assign.trial));
      job.seed = assign.seed;
      job.budget = assign.budget;
      job.report_every = spec_.report_every;
      pack.add(job);
      spdlog::info("actor {}: trial {} joins the pack ({} members) for budget {}", id_,
                   assign.trial, pack.size(), assign.budget);
    } catch (const std::exception& e) {
      send_message(socket_, proto::TrialFailed{assign.trial, actors::error_message(e)});
    }
  }

  ActorOptions options_;
  zmq::context_t context_;
  zmq::socket_t socket_;
  int id_ = -1;
  proto::ExperimentSpec spec_;
};

}  // namespace

int run_actor(const ActorOptions& options) {
  try {
    Actor actor(options);
    return actor.run();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    // LibTorch errors carry a C++ backtrace; the user gets the first line only.
    throw Error(actors::error_message(e));
  }
}

}  // namespace packtune
