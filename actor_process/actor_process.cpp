#include "actor_process/actor_process.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <limits>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "actor_process/actor.hpp"
#include "actor_process/keepalive.hpp"
#include "actor_process/logging.hpp"
#include "actors/autocast.hpp"
#include "actors/cuda_step.hpp"
#include "actors/device.hpp"
#include "actors/model_plugins.hpp"
#include "actors/throughput_profile.hpp"
#include "actors/torchscript_file.hpp"
#include "experiment/trial_shape.hpp"
#include "packtune/error.hpp"
#include "packtune/test_hold.hpp"
#include "protocol/curve_keys.hpp"
#include "protocol/zmq_channel.hpp"
#include "spec/family_json.hpp"
#include "util/host_name.hpp"

namespace packtune::actor_process {

namespace proto = protocol;

Actor::Actor(const ActorOptions& options)
    : options_(options), context_(1), socket_(context_, zmq::socket_type::dealer) {
  socket_.set(zmq::sockopt::linger, 1000);
  limit_frames(socket_);
  if (!options_.keys.empty()) use_curve_client(socket_, load_actor_keys(options_.keys));
  socket_.connect(options_.driver);
}

int Actor::run() {
  if (!options_.work_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(options_.work_dir, ec);
    if (ec) throw Error("cannot create the work folder " + options_.work_dir + ": " + ec.message());
  }
  const int threads = options_.threads > 0 ? options_.threads
                                            : static_cast<int>(std::thread::hardware_concurrency());
  proto::Hello& hello = hello_;
  hello.host = util::host_name();
  hello.pid = getpid();
  hello.local_index = options_.local_index;
  hello.node_id = options_.node_id;
  hello.threads = threads;
  const auto welcome = join_driver<proto::Welcome>(socket_, hello, options_.driver,
                                                  options_.connect_timeout_seconds, "actor");
  id_ = welcome.actor_id;
  spec_ = welcome.spec;
  transfer_token_ = welcome.transfer_token;
  logging::info("actor {}: connected to {} (pid {})", id_, options_.driver, hello.pid);
  open_checkpoint_store();

  std::unique_ptr<datasets::BatchStream> stream;
  std::string device;
  bool cudnn_benchmark = false;
  proto::Ready& ready = ready_;
  Keepalive keepalive(socket_, spec_.heartbeat_seconds);
  try {
    // Counts every CPU tensor from here on: the data set is the actor's base, the rest
    // is what its trials hold (the planner's currency).
    auto& meter = actors::MemoryMeter::instance();
    // Before any model is built; a plugin that fails to load is this actor's end, said once.
    if (!spec_.model_plugin.empty()) {
      const auto families = actors::load_model_plugin(spec_.model_plugin);
      logging::info("actor {}: model plugin {}: {} famil{}", id_, spec_.model_plugin, families.size(),
                    families.size() == 1 ? "y" : "ies");
    }
    device = actors::resolve_device(spec_.device, options_.local_index >= 0 ? options_.local_index : id_);
    actors::make_current(torch::Device(device));
    if (spec_.deterministic) {
      actors::make_deterministic(device);  // before any cuBLAS or cuDNN call
    } else if (actors::use_cudnn_benchmark(device)) {
      logging::info("actor {}: cuDNN's benchmark mode is on (PACKTUNE_CUDNN_BENCHMARK=0 turns it off)", id_);
      cudnn_benchmark = true;
    }
    precision_ = actors::use_precision(spec::parse_precision(spec_.precision, "precision"), device);
    actors::configure_cpu_threads(threads);
    // Before the data set is loaded: its buffers come from the heap whose trim threshold
    // this sets.
    const bool cpu = torch::Device(device).is_cpu();
    retained_heap_bytes_ = cpu ? actors::retained_heap_bytes(spec_.actor_memory_bytes > 0 ? spec_.actor_memory_bytes
                                                                                         : available_memory_bytes())
                               : 0;
    actors::keep_large_blocks_in_heap(cpu ? retained_heap_bytes_ : actors::kMaxRetainedHeapBytes);
    const auto data = data_options();
    const auto start = Clock::now();
    auto device_ready = actors::warm_up(torch::Device(device));
    auto split = datasets::load_split(data);
    device_ready.get();
    stream = std::make_unique<datasets::BatchStream>(split, torch::Device(device), spec_.data_seed,
                                                     datasets::stream_options_of(data));
    stream_ = stream.get();
    ready = memory_figures(device, meter);
    logging::info("actor {}: {} training and {} validation examples on {} in {:.2f} s, {} threads; {}",
                 id_, split.train.count, split.validation.count, device,
                 std::chrono::duration<double>(Clock::now() - start).count(), threads, actors::libtorch_summary());
  } catch (const std::exception& e) {
    keepalive.stop();
    send_message(socket_, proto::ActorFailed{actors::error_message(e)});
    throw;
  }
  keepalive.stop();
  actors::PackExecutor pack(*stream, actors::parse_budget_unit(spec_.budget_unit), spec_.fuse != "never");
  ready.device = device;
  input_ = actors::input_shape(*stream);
  ready.device_model = actors::device_model(device, threads);
  // A step's time hangs on the precision as much as on the build: part of the profile's key.
  // So are cuDNN's algorithms: chosen by benchmark, or the deterministic ones.
  ready.build = actors::build_summary(device) + ", precision " + spec::to_string(precision_) +
                (cudnn_benchmark ? ", cuDNN benchmark" : "") +
                (spec_.deterministic && torch::Device(device).is_cuda() ? ", deterministic" : "");
  ready.data_context = actors::profile_data_context(input_, datasets::stream_options_of(data_options()));
  send_message(socket_, ready);
  return serve(pack);
}

datasets::DataOptions Actor::data_options() const {
  const auto parsed = nlohmann::json::parse(spec_.data, nullptr, false);
  if (parsed.is_discarded()) throw InputError("data: the driver's data options are not JSON");
  return parsed.get<datasets::DataOptions>();
}

int Actor::serve(actors::PackExecutor& pack) {
  const auto heartbeat = std::chrono::duration<double>(spec_.heartbeat_seconds);
  // The driver heartbeats too; silence this long means it is gone.
  const auto driver_timeout = options_.driver_timeout_seconds > 0
                                  ? std::chrono::duration<double>(options_.driver_timeout_seconds)
                                  : std::max(std::chrono::duration<double>(30), heartbeat * 30);
  auto last_sent = Clock::now();
  auto last_heard = Clock::now();
  while (true) {
    const bool busy = pack.busy() || !calibrations_.empty() || !profiles_.empty();
    const bool waiting = !saves_.empty() || !resumes_.empty();
    bool more = false;  // the last Assign said more of its dispatch follow
    while (auto message = receive_message(socket_, more    ? static_cast<long>(heartbeat.count() * 1000)
                                                   : busy  ? 0
                                                   : waiting ? 5
                                                             : 100)) {
      more = false;
      last_heard = Clock::now();
      if (std::holds_alternative<proto::Shutdown>(*message)) {
        logging::info("actor {}: shutdown by the driver", id_);
        send_saved(true);
        return 0;
      }
      if (auto* assign = std::get_if<proto::Assign>(&*message)) {
        // Fault tests act on a driver whose run cannot end meanwhile: its one actor holds here.
        test_hold("actor.assigned");
        actors::PackJob named;  // what group_of reads of a job
        named.trial = assign->trial;
        named.unit = assign->unit;
        named.max_fused = assign->max_fused;
        batch_.insert(pack.group_of(named));
        start_trial(pack, *assign);
        more = assign->more;
        if (!more) end_batch(pack);
      } else if (auto* stop = std::get_if<proto::Stop>(&*message)) {
        pack.remove(stop->trial);  // parked or training
        resumes_.remove_if([&](const Resume& r) { return r.job.trial == stop->trial; });
        lease_of(stop->trial, true);
      } else if (auto* rejoin = std::get_if<proto::Rejoin>(&*message)) {
        join_again(pack, rejoin->reason);
      } else if (std::holds_alternative<proto::Welcome>(*message) && !rejoining_) {
        // The answer to a Hello said again while the first answer was on its way (hello_driver).
      } else if (auto* welcome = std::get_if<proto::Welcome>(&*message)) {
        rejoining_ = false;
        logging::info("actor {}: joined again as actor {}", id_, welcome->actor_id);
        id_ = welcome->actor_id;
        transfer_token_ = welcome->transfer_token;
        if (transfer_) transfer_->set_token(transfer_token_);
        send_message(socket_, ready_);
      } else if (auto* profile = std::get_if<proto::Profile>(&*message)) {
        queue_profile(*profile);
      } else if (auto* test = std::get_if<proto::Test>(&*message)) {
        // Fault tests stop the driver while its test of the best trial is under way.
        test_hold("actor.testing");
        send_message(socket_, run_test(*test));
      }
      last_sent = Clock::now();  // replies above count as signs of life
    }
    // Judged only once every queued message is read: after a long step of a profile (or a
    // test), the driver's heartbeats of meanwhile are waiting in the socket, not missing.
    if (Clock::now() - last_heard > driver_timeout) {
      throw Error(fmt::format("actor {}: no message from the driver at {} for {:g} s; stopping this actor", id_,
                              options_.driver, driver_timeout.count()));
    }
    if (!batch_.empty()) end_batch(pack);  // the rest of a dispatch never came
    advance_resumes(pack);
    if (pack.busy() && handle_round(pack.step_round())) last_sent = Clock::now();
    checkpoint_long_jobs(pack);
    if (advance_profiles(pack)) last_sent = Clock::now();
    if (send_saved(false)) last_sent = Clock::now();
    const auto now = Clock::now();
    if (now - last_sent >= heartbeat) {
      send_message(socket_, proto::Heartbeat{});
      last_sent = now;
    }
  }
}

bool Actor::handle_round(const std::vector<actors::PackEvent>& events) {
  proto::OutOfMemory out_of_memory;
  for (const auto& event : events) {
    if (event.out_of_memory) {
      // The driver re-places these with a larger memory figure; not a trial failure.
      out_of_memory.trials.push_back(event.trial);
      out_of_memory.leases.push_back(lease_of(event.trial, true));
      out_of_memory.message = event.error;
    } else if (!event.error.empty()) {
      logging::warn("actor {}: trial {} failed: {}", id_, event.trial, event.error);
      send_message(socket_, proto::TrialFailed{event.trial, event.error, lease_of(event.trial, true)});
    } else {
      report(event);
    }
  }
  if (const auto failure = actors::take_cuda_graph_failure(); !failure.empty()) {
    logging::warn("actor {}: CUDA graphs are off in this actor, every step runs eagerly (same results, "
                  "slower): a capture failed: {}", id_, failure);
  }
  if (!out_of_memory.trials.empty()) {
    logging::warn("actor {}: {} trial(s) ran out of memory and leave the pack: {}", id_,
                  out_of_memory.trials.size(), out_of_memory.message);
    send_message(socket_, out_of_memory);
  }
  return !events.empty();
}

std::uint64_t Actor::lease_of(tuners::TrialId trial, bool ended) {
  auto it = leases_.find(trial);
  if (it == leases_.end()) return 0;
  const auto lease = it->second;
  if (ended) {
    leases_.erase(it);
    last_saved_.erase(trial);
  }
  return lease;
}

void Actor::join_again(actors::PackExecutor& pack, const std::string& reason) {
  logging::warn("actor {}: the driver retired this actor ({}); dropping {} job(s) and joining again", id_, reason,
                leases_.size());
  for (const auto& [trial, lease] : leases_) pack.remove(trial);
  pack.release_parked();
  batch_.clear();
  leases_.clear();
  last_saved_.clear();
  start_budget_.clear();
  resumes_.clear();
  profiles_.clear();
  saves_.clear();  // waits for checkpoints being written; their reports are not sent
  rejoining_ = true;
  send_message(socket_, hello_);
}

void Actor::start_trial(actors::PackExecutor& pack, const proto::Assign& assign) {
  leases_[assign.trial] = assign.lease;
  last_saved_.erase(assign.trial);
  try {
    actors::PackJob job;
    job.trial = assign.trial;
    job.spec = assign.spec;
    job.seed = assign.seed;
    job.budget = assign.budget;
    job.report_every = spec_.report_every;
    job.max_budget = spec_.max_budget;
    job.config = assign.config;
    job.checkpoint = !spec_.checkpoint_dir.empty() && assign.checkpoint;
    job.max_fused = assign.max_fused;
    job.unit = assign.unit;
    job.park = assign.park;
    if (pack.continue_parked(job, assign.exploit_from, assign.resume_budget)) {
      start_budget_[assign.trial] = assign.resume_budget;
      logging::info("actor {}: trial {} goes on in unit {} from {} at budget {:g}, to budget {}", id_, assign.trial,
                    assign.unit,
                    assign.exploit_from >= 0 ? "trial " + std::to_string(assign.exploit_from) + "'s weights"
                                             : std::string("its own weights"),
                    assign.resume_budget, assign.budget);
      return;
    }
    calibrate(job.spec, torch::Device(pack_device_));
    Resume resume{job, assign.resume_from};
    if (!advance_resume(pack, resume)) {
      logging::info("actor {}: trial {} waits for its checkpoint from the driver", id_, assign.trial);
      resumes_.push_back(std::move(resume));
      return;
    }
    logging::info("actor {}: trial {} joins the pack ({} members) for budget {}", id_,
                 assign.trial, pack.size(), assign.budget);
  } catch (const std::exception& e) {
    lease_of(assign.trial, true);
    if (pack.parked(assign.trial)) pack.remove(assign.trial);  // its unit must not wait for it
    send_message(socket_, proto::TrialFailed{assign.trial, actors::error_message(e), assign.lease});
  }
}

void Actor::end_batch(actors::PackExecutor& pack) {
  pack.end_batch(batch_);
  batch_.clear();
}

void Actor::report(const actors::PackEvent& event) {
  proto::Report report{event.trial, event.budget, event.metrics, event.final, event.train_seconds};
  // The driver refuses infinite metrics (a forged report's); a loss that overflowed to infinity
  // has diverged as one that is NaN, and goes as NaN.
  for (auto& [name, value] : report.metrics) {
    if (std::isinf(value)) value = std::numeric_limits<double>::quiet_NaN();
  }
  report.lease = lease_of(event.trial, event.final);
  report.start_budget = start_budget_[event.trial];
  report.unit_size = event.unit_size;
  if (!event.final) {
    send_message(socket_, report);
    test_hold("actor.reported");
    return;
  }
  start_budget_.erase(event.trial);
  if (!event.checkpoint_error.empty()) {
    logging::warn("actor {}: trial {}: no checkpoint at budget {:g}: {}", id_, event.trial, event.budget,
                 event.checkpoint_error);
  }
  // The tensors are already host copies: the pack trains on while a thread writes them,
  // and the final report goes out once the file is in place.
  std::future<Saved> saved;
  if (event.checkpoint) {
    saved = std::async(std::launch::async, [this, checkpoint = event.checkpoint] { return save(*checkpoint); });
  } else {
    std::promise<Saved> none;
    none.set_value({});
    saved = none.get_future();
  }
  saves_.push_back({std::move(report), std::move(saved)});
  send_saved(false);
}

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

void describe_model_plugin(const std::string& path) {
  std::cout << spec::families_to_json(actors::load_model_plugin(path)).dump() << std::endl;
}

void check_torchscript_files(const std::vector<std::string>& paths, const std::string& input, int outputs,
                             bool regression, const std::vector<std::string>& attributes) {
  std::vector<actors::AttributeKind> kinds;
  for (const auto& a : attributes) {
    const auto equals = a.find('=');
    if (equals == std::string::npos) throw InputError("--attribute: expected KEY=KIND, got \"" + a + "\"");
    kinds.push_back({a.substr(0, equals), a.substr(equals + 1)});
  }
  spec::InputShape shape;
  std::vector<int> sizes;
  std::stringstream text(input);
  for (std::string part; std::getline(text, part, ',');) {
    try {
      sizes.push_back(std::stoi(part));
    } catch (const std::exception&) {
      sizes.clear();
      break;
    }
  }
  const bool positive = std::all_of(sizes.begin(), sizes.end(), [](int n) { return n > 0; });
  if ((sizes.size() != 1 && sizes.size() != 3) || !positive || outputs < 1) {
    throw InputError("--input: expected C,H,W or D, sizes of at least 1, and --outputs at least 1");
  }
  shape.images = sizes.size() == 3;
  shape.channels = shape.images ? sizes[0] : 1;
  shape.height = shape.images ? sizes[1] : 1;
  shape.width = sizes.back();
  shape.outputs = outputs;
  shape.task = regression ? datasets::Task::Regression : datasets::Task::Classification;
  for (const auto& path : paths) {
    actors::check_torchscript_attributes(actors::load_torchscript(path, shape, torch::kCPU), path, kinds);
    std::cout << "ok " << path << std::endl;
  }
}

}  // namespace packtune::actor_process
