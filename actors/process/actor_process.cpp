#include "actor/actor_process.hpp"

#include <sys/statvfs.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <future>
#include <list>
#include <set>
#include <thread>

#include "actor/transfer_client.hpp"
#include "actors/checkpoint_file.hpp"
#include "actors/cuda_step.hpp"
#include "actors/device.hpp"
#include "actors/memory_meter.hpp"
#include "actors/memory_profile.hpp"
#include "actors/pack_executor.hpp"
#include "actors/throughput_profile.hpp"
#include "actors/trial_runner.hpp"
#include "datasets/batch_stream.hpp"
#include "experiment/trial_shape.hpp"
#include "logging.hpp"
#include "node/actor_supervisor.hpp"
#include "node/node_agent.hpp"
#include "packtune/error.hpp"
#include "packtune/test_hold.hpp"
#include "protocol/curve_keys.hpp"
#include "protocol/zmq_channel.hpp"

namespace packtune {
namespace {

using Clock = std::chrono::steady_clock;
namespace proto = protocol;

class Actor {
 public:
  explicit Actor(const ActorOptions& options)
      : options_(options), context_(1), socket_(context_, zmq::socket_type::dealer) {
    socket_.set(zmq::sockopt::linger, 1000);
    if (!options_.keys.empty()) use_curve_client(socket_, load_actor_keys(options_.keys));
    socket_.connect(options_.driver);
  }

  int run() {
    if (!options_.work_dir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(options_.work_dir, ec);
      if (ec) throw Error("cannot create the work folder " + options_.work_dir + ": " + ec.message());
    }
    const int threads = options_.threads > 0 ? options_.threads
                                              : static_cast<int>(std::thread::hardware_concurrency());
    proto::Hello& hello = hello_;
    hello.host = host_name();
    hello.pid = getpid();
    hello.local_index = options_.local_index;
    hello.node_id = options_.node_id;
    hello.threads = threads;
    send_message(socket_, hello);

    auto reply = receive_message(socket_, static_cast<long>(options_.connect_timeout_seconds * 1000));
    if (!reply) {
      throw Error("no driver answered at " + options_.driver + " within " +
                  std::to_string(static_cast<int>(options_.connect_timeout_seconds)) +
                  " s; is `packtune run` listening there? A driver with CURVE keys admits only actors started "
                  "with --keys DIR holding an actor key it authorized");
    }
    if (auto* reject = std::get_if<proto::Reject>(&*reply)) {
      throw Error("the driver refused this actor: " + reject->reason);
    }
    auto* welcome = std::get_if<proto::Welcome>(&*reply);
    if (!welcome) throw Error(std::string("expected Welcome from the driver, got ") + proto::verb(*reply));
    id_ = welcome->actor_id;
    spec_ = welcome->spec;
    logging::info("actor {}: connected to {} (pid {})", id_, options_.driver, hello.pid);
    open_checkpoint_store();

    std::unique_ptr<datasets::BatchStream> stream;
    std::string device;
    proto::Ready& ready = ready_;
    try {
      // Counts every CPU tensor from here on: the data set is the actor's base, the rest
      // is what its trials hold (the planner's currency).
      auto& meter = actors::MemoryMeter::instance();
      device = actors::resolve_device(spec_.device, options_.local_index >= 0 ? options_.local_index : id_);
      actors::make_current(torch::Device(device));
      actors::configure_cpu_threads(threads);
      // Before the data set is loaded: its buffers come from the heap whose trim threshold
      // this sets.
      const bool cpu = torch::Device(device).is_cpu();
      retained_heap_bytes_ = cpu ? actors::retained_heap_bytes(spec_.actor_memory_bytes > 0 ? spec_.actor_memory_bytes
                                                                                           : available_memory_bytes())
                                 : 0;
      actors::keep_large_blocks_in_heap(cpu ? retained_heap_bytes_ : actors::kMaxRetainedHeapBytes);
      datasets::DataOptions data;
      data.name = spec_.data_name;
      data.dir = spec_.data_dir;
      data.train_size = spec_.train_size;
      data.validation_size = spec_.validation_size;
      const auto start = Clock::now();
      auto split = datasets::load_image_split(data);
      stream = std::make_unique<datasets::BatchStream>(split, torch::Device(device), spec_.data_seed);
      stream_ = stream.get();
      ready = memory_figures(device, meter);
      logging::info("actor {}: {} training and {} validation images on {} in {:.2f} s, {} threads",
                   id_, split.train.count, split.validation.count, device,
                   std::chrono::duration<double>(Clock::now() - start).count(), threads);
    } catch (const std::exception& e) {
      send_message(socket_, proto::ActorFailed{actors::error_message(e)});
      throw;
    }
    actors::PackExecutor pack(*stream, actors::parse_budget_unit(spec_.budget_unit), spec_.fuse != "never");
    ready.device = device;
    input_ = actors::InputShape{stream->channels(), stream->height(), stream->width(), stream->classes()};
    send_message(socket_, ready);
    return serve(pack);
  }

 private:
  int serve(actors::PackExecutor& pack) {
    const auto heartbeat = std::chrono::duration<double>(spec_.heartbeat_seconds);
    // The driver heartbeats too; silence this long means it is gone.
    const auto driver_timeout = options_.driver_timeout_seconds > 0
                                    ? std::chrono::duration<double>(options_.driver_timeout_seconds)
                                    : std::max(std::chrono::duration<double>(30), heartbeat * 30);
    auto last_sent = Clock::now();
    auto last_heard = Clock::now();
    while (true) {
      const bool busy = !pack.empty() || !calibrations_.empty() || !profiles_.empty();
      const bool waiting = !saves_.empty() || !resumes_.empty();
      while (auto message = receive_message(socket_, busy ? 0 : waiting ? 5 : 100)) {
        last_heard = Clock::now();
        if (std::holds_alternative<proto::Shutdown>(*message)) {
          logging::info("actor {}: shutdown by the driver", id_);
          send_saved(true);
          return 0;
        }
        if (auto* assign = std::get_if<proto::Assign>(&*message)) {
          // Fault tests act on a driver whose run cannot end meanwhile: its one actor holds here.
          test_hold("actor.assigned");
          start_trial(pack, *assign);
        } else if (auto* stop = std::get_if<proto::Stop>(&*message)) {
          pack.remove(stop->trial);
          resumes_.remove_if([&](const Resume& r) { return r.job.trial == stop->trial; });
          lease_of(stop->trial, true);
        } else if (auto* rejoin = std::get_if<proto::Rejoin>(&*message)) {
          join_again(pack, rejoin->reason);
        } else if (auto* welcome = std::get_if<proto::Welcome>(&*message)) {
          logging::info("actor {}: joined again as actor {}", id_, welcome->actor_id);
          id_ = welcome->actor_id;
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
      advance_resumes(pack);
      if (!pack.empty()) {
        proto::OutOfMemory out_of_memory;
        for (auto& event : pack.step_round()) {
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
          last_sent = Clock::now();
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
      }
      checkpoint_long_jobs(pack);
      if (advance_profiles()) last_sent = Clock::now();
      if (send_saved(false)) last_sent = Clock::now();
      const auto now = Clock::now();
      if (now - last_sent >= heartbeat) {
        send_message(socket_, proto::Heartbeat{});
        last_sent = now;
      }
      if (now - last_heard > driver_timeout) {
        throw Error(fmt::format("actor {}: no message from the driver at {} for {:g} s; stopping this actor", id_,
                                options_.driver, driver_timeout.count()));
      }
    }
  }

  // The lease of the trial's job (Assign.lease); `ended`: the job is over, forget it.
  std::uint64_t lease_of(tuners::TrialId trial, bool ended) {
    auto it = leases_.find(trial);
    if (it == leases_.end()) return 0;
    const auto lease = it->second;
    if (ended) {
      leases_.erase(it);
      last_saved_.erase(trial);
    }
    return lease;
  }

  // The driver retired this actor while it could not hear it and gave its jobs to others:
  // they are dropped (their reports would be refused) and the actor says Hello again.
  void join_again(actors::PackExecutor& pack, const std::string& reason) {
    logging::warn("actor {}: the driver retired this actor ({}); dropping {} job(s) and joining again", id_, reason,
                  leases_.size());
    for (const auto& [trial, lease] : leases_) pack.remove(trial);
    leases_.clear();
    last_saved_.clear();
    start_budget_.clear();
    resumes_.clear();
    profiles_.clear();
    saves_.clear();  // waits for checkpoints being written; their reports are not sent
    send_message(socket_, hello_);
  }

  // checkpoint_every: a member that trained that long since it joined or was last saved is
  // saved now, while the pack trains on, and the driver hears of it once the file is stored.
  void checkpoint_long_jobs(const actors::PackExecutor& pack) {
    if (!(spec_.checkpoint_every_seconds > 0) || local_checkpoints_.empty()) return;
    const auto now = Clock::now();
    const auto every = std::chrono::duration<double>(spec_.checkpoint_every_seconds);
    for (auto& [trial, lease] : leases_) {
      auto [since, fresh] = last_saved_.try_emplace(trial, now);
      if (fresh || now - since->second < every) continue;
      since->second = now;
      auto checkpoint = pack.checkpoint_now(trial);
      if (!checkpoint) continue;
      PendingSave pending;
      pending.report.trial = trial;
      pending.report.lease = lease;
      pending.report.budget = checkpoint->budget;
      pending.inside_job = true;
      pending.path = std::async(std::launch::async, [this, checkpoint] { return save(*checkpoint); });
      saves_.push_back(std::move(pending));
    }
  }

  void start_trial(actors::PackExecutor& pack, const proto::Assign& assign) {
    leases_[assign.trial] = assign.lease;
    last_saved_.erase(assign.trial);
    try {
      actors::PackJob job;
      job.trial = assign.trial;
      job.spec = actors::parse_trial_spec(assign.config, "trial " + std::to_string(assign.trial));
      job.seed = assign.seed;
      job.budget = assign.budget;
      job.report_every = spec_.report_every;
      job.config = assign.config;
      job.checkpoint = !spec_.checkpoint_dir.empty() && assign.checkpoint;
      job.max_fused = assign.max_fused;
      job.unit = assign.unit;
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
      send_message(socket_, proto::TrialFailed{assign.trial, actors::error_message(e), assign.lease});
    }
  }

  // The best trial's final model on the test split (proto::Test): a plain model of its own,
  // outside the pack, once the tuner is done. The test split is read only now.
  proto::Tested run_test(const proto::Test& test) {
    proto::Tested out;
    out.trial = test.trial;
    try {
      datasets::DataOptions data;
      data.name = spec_.data_name;
      data.dir = spec_.data_dir;
      const auto test_set = datasets::load_test_set(data);
      const auto [inputs, labels] = stream_->prepare(test_set);
      const auto spec = actors::parse_trial_spec(test.config, "trial " + std::to_string(test.trial));
      for (const auto& path : test.checkpoints) {
        try {
          const auto checkpoint = read_from_store(path);
          if (checkpoint.trial != test.trial) {
            throw InputError("checkpoint " + path + ": belongs to trial " + std::to_string(checkpoint.trial));
          }
          actors::TrialRunner runner(test.trial, spec, test.seed, *stream_);
          runner.restore(checkpoint);
          out.metrics = runner.evaluate_on(inputs, labels, "test_");
          out.budget = checkpoint.budget;
          out.error.clear();
          logging::info("actor {}: trial {} at budget {:g}: test_accuracy {:.4f} on {} test images", id_,
                        test.trial, checkpoint.budget, out.metrics["test_accuracy"], test_set.count);
          break;
        } catch (const Error& e) {
          out.error = e.what();  // the next, older checkpoint may do
        }
      }
      if (out.metrics.empty() && out.error.empty()) out.error = "the driver holds no checkpoint of it";
    } catch (const std::exception& e) {
      out.error = actors::error_message(e);
    }
    if (!out.error.empty()) logging::warn("actor {}: no test metrics for trial {}: {}", id_, test.trial, out.error);
    return out;
  }

  // A checkpoint in the driver's store: read where it is, or fetched into the work folder first.
  actors::TrialCheckpoint read_from_store(const std::string& path) {
    if (!transfer_) return actors::read_checkpoint(path);
    const auto name = std::filesystem::path(path).filename().string();
    auto fetched = transfer_->fetch(name, local_checkpoints_ + "/test-" + name, {});
    if (fetched.wait_for(std::chrono::minutes(5)) != std::future_status::ready) {
      throw Error("checkpoint " + name + ": not fetched from the driver within 5 minutes");
    }
    const auto local = fetched.get();
    struct Remove {
      std::string path;
      ~Remove() {
        std::error_code ec;
        std::filesystem::remove(path, ec);
      }
    } remove{local};
    return actors::read_checkpoint(local);
  }

  // Whether this actor sees the driver's checkpoint store (a local actor, a shared file
  // system) or must move checkpoints over ZeroMQ, keeping them meanwhile in its work folder.
  void open_checkpoint_store() {
    if (spec_.checkpoint_dir.empty()) return;
    std::ifstream in(spec_.checkpoint_dir + "/.store");
    std::string token;
    if (in >> token && token == spec_.store_token) {
      local_checkpoints_ = spec_.checkpoint_dir;
      return;
    }
    const std::string work = options_.work_dir.empty() ? fresh_work_dir("actor") : options_.work_dir;
    owned_work_dir_ = options_.work_dir.empty() ? work : "";
    local_checkpoints_ = work + "/checkpoints";
    std::filesystem::create_directories(local_checkpoints_);
    std::unique_ptr<CurveKeys> keys;
    if (!options_.keys.empty()) keys = std::make_unique<CurveKeys>(load_actor_keys(options_.keys));
    transfer_ = std::make_unique<TransferClient>(options_.driver, keys.get(), TransferOptions{});
    logging::info("actor {}: the driver's checkpoint store {} is not on this machine; checkpoints travel over "
                  "ZeroMQ through {}", id_, spec_.checkpoint_dir, local_checkpoints_);
  }

  // A trial that resumes: its checkpoints, newest first, are tried in turn until one loads
  // and fits. With the store on another machine each is fetched first, while the pack trains.
  struct Resume {
    actors::PackJob job;
    std::vector<std::string> paths;
    std::size_t next = 0;             // paths[next - 1] is the one being tried
    std::future<std::string> fetch;   // its local copy, while it is on its way
    // The fetched copy as the transfer thread loaded it to verify it: the resume uses that
    // load instead of reading the file a second time.
    std::shared_ptr<std::shared_ptr<const actors::TrialCheckpoint>> loaded;
    Clock::time_point asked;
  };

  // Moves a resume on as far as it can without waiting; true once the trial is in the pack
  // (from a checkpoint, or from scratch when none could be used).
  bool advance_resume(actors::PackExecutor& pack, Resume& r) {
    while (true) {
      if (r.fetch.valid()) {
        if (r.fetch.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return false;
        try {
          if (try_resume(pack, r, r.fetch.get())) return true;
        } catch (const Error& e) {
          give_up_checkpoint(r, e.what());
        }
        continue;
      }
      if (r.next >= r.paths.size()) {
        r.job.resume.reset();
        pack.add(r.job);
        start_budget_[r.job.trial] = 0;
        return true;
      }
      const auto& path = r.paths[r.next++];
      if (!transfer_) {
        if (try_resume(pack, r, path)) return true;
        continue;
      }
      const auto name = std::filesystem::path(path).filename().string();
      r.asked = Clock::now();
      r.loaded = std::make_shared<std::shared_ptr<const actors::TrialCheckpoint>>();
      r.fetch = transfer_->fetch(name, local_checkpoints_ + "/fetched-" + name,
                                 [loaded = r.loaded](const std::string& path) {
                                   *loaded = std::make_shared<const actors::TrialCheckpoint>(actors::read_checkpoint(path));
                                 });
    }
  }

  // Resumes r's trial from `file` (the checkpoint being tried, or its fetched copy); a torn,
  // corrupt or foreign file is never used, only logged.
  bool try_resume(actors::PackExecutor& pack, Resume& r, const std::string& file) {
    const auto& source = r.paths[r.next - 1];
    std::error_code ec;
    try {
      auto checkpoint = file != source && r.loaded && *r.loaded
                            ? std::move(*r.loaded)
                            : std::make_shared<const actors::TrialCheckpoint>(actors::read_checkpoint(file));
      if (file != source) std::filesystem::remove(file, ec);
      if (checkpoint->trial != r.job.trial) {
        throw InputError("checkpoint " + source + ": belongs to trial " + std::to_string(checkpoint->trial));
      }
      r.job.resume = checkpoint;
      pack.add(r.job);
      start_budget_[r.job.trial] = checkpoint->budget;
      logging::info("actor {}: trial {} resumed from {} (budget {:g}, step {}){}", id_, r.job.trial, source,
                    checkpoint->budget, checkpoint->step,
                    file == source ? std::string()
                                   : fmt::format(", fetched from the driver in {:.2f} s",
                                                 std::chrono::duration<double>(Clock::now() - r.asked).count()));
      return true;
    } catch (const Error& e) {
      if (file != source) std::filesystem::remove(file, ec);
      give_up_checkpoint(r, e.what());
      return false;
    }
  }

  void give_up_checkpoint(Resume& r, const std::string& why) {
    r.job.resume.reset();
    logging::warn("actor {}: trial {} cannot resume: {}; {}", id_, r.job.trial, why,
                  r.next < r.paths.size() ? "trying its previous checkpoint" : "training it from scratch");
  }

  // Resumes waiting for their checkpoints; a failure fails the trial, not the actor.
  void advance_resumes(actors::PackExecutor& pack) {
    for (auto it = resumes_.begin(); it != resumes_.end();) {
      bool done = true;
      try {
        done = advance_resume(pack, *it);
      } catch (const std::exception& e) {
        send_message(socket_, proto::TrialFailed{it->job.trial, actors::error_message(e), lease_of(it->job.trial, true)});
      }
      it = done ? resumes_.erase(it) : std::next(it);
    }
  }

  // What the planner needs to know of this actor's memory.
  proto::Ready memory_figures(const std::string& device, actors::MemoryMeter& meter) {
    pack_device_ = device;
    proto::Ready r;
    // The heap glibc may keep after a step's buffers are freed is this process's memory
    // too: on a CPU it comes out of the same share as the trials'.
    r.base_bytes = meter.current_bytes() + retained_heap_bytes_;
    // On a GPU the data set lives in device memory, which the meter (CPU tensors) does not see.
    const auto gpu = actors::gpu_memory(device);
    r.base_bytes += gpu.held_bytes;
    if (spec_.actor_memory_bytes > 0) {
      r.capacity_bytes = spec_.actor_memory_bytes;
      r.capacity_shared = false;
      if (torch::Device(device).is_cpu()) meter.set_limit(spec_.actor_memory_bytes);
    } else if (torch::Device(device).is_cpu()) {
      r.capacity_bytes = available_memory_bytes();
    } else {
      r.capacity_bytes = gpu.total_bytes;  // shared: the driver splits it among the GPU's actors
    }
    return r;
  }

  // Measures the memory of each new shape once (CPU: exact tensor counts), between rounds.
  void calibrate(const actors::TrialSpec& spec, torch::Device device) {
    if (!device.is_cpu()) return;
    if (!profiled_.insert(trial_shape(spec).key).second) return;
    calibrations_.push_back(spec);
  }

  void queue_profile(const proto::Profile& request) {
    try {
      auto spec = actors::parse_trial_spec(request.config, "profile of shape " + request.key);
      profiles_.push_back({request.key, Clock::now(),
                           std::make_unique<actors::ThroughputProfiler>(spec, request.max_members, input_,
                                                                        torch::Device(pack_device_))});
    } catch (const std::exception& e) {
      send_message(socket_, proto::Profiled{request.key, pack_device_, {}, {}, actors::error_message(e)});
    }
  }

  // One piece of profiling work per round of the pack: a memory calibration, or one K of a
  // throughput profile. Returns whether a message went out.
  bool advance_profiles() {
    if (!calibrations_.empty()) {
      const auto spec = calibrations_.front();
      calibrations_.pop_front();
      const auto key = trial_shape(spec).key;
      try {
        const auto bytes = actors::measure_peak_bytes(spec, 1, input_, torch::Device(pack_device_));
        send_message(socket_, proto::Measured{key, 1, bytes});
        return true;
      } catch (const std::exception& e) {
        logging::warn("actor {}: could not profile the memory of shape {}: {}", id_, key, actors::error_message(e));
        return false;
      }
    }
    if (profiles_.empty()) return false;
    auto& task = profiles_.front();
    if (task.profiler->advance()) return false;
    proto::Profiled answer{task.key, pack_device_, {}, {}, task.profiler->error()};
    for (const auto& [members, seconds] : task.profiler->points()) {
      answer.members.push_back(members);
      answer.seconds.push_back(seconds);
    }
    logging::info("actor {}: profiled shape {} up to {} member(s) in {:.2f} s", id_, task.key,
                 answer.members.empty() ? 0 : answer.members.back(),
                 std::chrono::duration<double>(Clock::now() - task.asked).count());
    send_message(socket_, answer);
    profiles_.pop_front();
    return true;
  }

  void report(const actors::PackEvent& event) {
    proto::Report report{event.trial, event.budget, event.metrics, event.final, event.train_seconds};
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

  struct Saved {
    std::string path;   // in the store; empty when it could not be written
    std::string error;  // why not
    bool disk_full = false;
  };

  // Writes the checkpoint into the store, or into the work folder and then over to the driver's
  // store; returns its path in the store. The final report waits for it: a checkpoint the
  // driver does not hold yet cannot be promoted, so a dead actor loses none that could be.
  Saved save(const actors::TrialCheckpoint& checkpoint) const {
    const auto path = actors::checkpoint_path(local_checkpoints_, checkpoint.trial, checkpoint.budget);
    try {
      const auto start = Clock::now();
      std::filesystem::create_directories(local_checkpoints_);
      actors::write_checkpoint(path, checkpoint, /*durable=*/!transfer_);
      const double written = std::chrono::duration<double>(Clock::now() - start).count();
      const double mib = static_cast<double>(checkpoint.bytes()) / (1 << 20);
      if (!transfer_) {
        logging::info("actor {}: trial {} checkpoint at budget {:g}: {} ({:.1f} MiB in {:.2f} s)", id_,
                      checkpoint.trial, checkpoint.budget, path, mib, written);
        return {path};
      }
      const auto sent = Clock::now();
      std::string stored;
      try {
        stored = transfer_->upload(path, std::filesystem::path(path).filename().string()).get();
      } catch (...) {
        std::error_code ec;
        std::filesystem::remove(path, ec);
        throw;
      }
      std::error_code ec;
      std::filesystem::remove(path, ec);
      logging::info("actor {}: trial {} checkpoint at budget {:g}: {} ({:.1f} MiB written in {:.2f} s, sent to the "
                    "driver in {:.2f} s)", id_, checkpoint.trial, checkpoint.budget, stored, mib, written,
                    std::chrono::duration<double>(Clock::now() - sent).count());
      return {stored};
    } catch (const std::exception& e) {
      logging::warn("actor {}: trial {}: cannot write its checkpoint: {}", id_, checkpoint.trial, e.what());
      // HDF5's messages do not say ENOSPC; the file system does.
      struct statvfs fs {};
      const auto needs = checkpoint.bytes() + (std::int64_t{1} << 20);
      if (::statvfs(local_checkpoints_.c_str(), &fs) == 0 &&
          static_cast<std::int64_t>(fs.f_bavail) * static_cast<std::int64_t>(fs.f_frsize) < needs) {
        return {"", fmt::format("no space left on the disk of {} for trial {}'s checkpoint ({} MiB free, it needs {} MiB)",
                                local_checkpoints_, checkpoint.trial,
                                static_cast<std::int64_t>(fs.f_bavail) * static_cast<std::int64_t>(fs.f_frsize) >> 20,
                                needs >> 20),
                true};
      }
      return {"", e.what()};
    }
  }

  // Sends the final reports whose checkpoints are written, in order; all of them when `wait`.
  bool send_saved(bool wait) {
    bool sent = false;
    while (!saves_.empty() &&
           (wait || saves_.front().path.wait_for(std::chrono::seconds(0)) == std::future_status::ready)) {
      auto& front = saves_.front();
      const Saved saved = front.path.get();
      if (front.inside_job) {
        // A checkpoint that failed inside a job costs only the restart it would have shortened.
        if (!saved.path.empty()) {
          send_message(socket_, proto::Checkpointed{front.report.trial, front.report.lease, saved.path,
                                                    front.report.budget});
          test_hold("actor.checkpoint_inside");
        }
        saves_.pop_front();
        sent = true;
        continue;
      }
      front.report.checkpoint = saved.path;
      front.report.checkpoint_error = saved.error;
      front.report.disk_full = saved.disk_full;
      send_message(socket_, front.report);
      saves_.pop_front();
      sent = true;
    }
    return sent;
  }

  struct PendingSave {
    proto::Report report;
    std::future<Saved> path;
    bool inside_job = false;  // checkpoint_every's: the driver gets Checkpointed, not the report
  };

  ActorOptions options_;
  zmq::context_t context_;
  zmq::socket_t socket_;
  int id_ = -1;
  proto::ExperimentSpec spec_;
  std::map<tuners::TrialId, double> start_budget_;  // budget each running job started from
  std::map<tuners::TrialId, std::uint64_t> leases_;  // each job's Assign.lease
  std::map<tuners::TrialId, Clock::time_point> last_saved_;  // checkpoint_every's clock per job
  proto::Hello hello_;  // said again to rejoin
  proto::Ready ready_;
  std::string pack_device_ = "cpu";
  std::int64_t retained_heap_bytes_ = 0;  // counted in Ready.base_bytes on a CPU
  actors::InputShape input_;
  std::set<std::string> profiled_;  // shape keys whose memory was measured or queued
  std::deque<actors::TrialSpec> calibrations_;  // memory calibrations not yet run
  struct ProfileTask {
    std::string key;
    Clock::time_point asked;
    std::unique_ptr<actors::ThroughputProfiler> profiler;
  };
  std::deque<ProfileTask> profiles_;  // throughput profiles the driver asked for, in order
  std::deque<PendingSave> saves_;                   // final reports waiting for their file
  std::string local_checkpoints_;  // where save() writes: the store itself, or the work folder
  std::unique_ptr<TransferClient> transfer_;  // when the store is not on this machine
  const datasets::BatchStream* stream_ = nullptr;  // the pack's, once the data is loaded
  std::list<Resume> resumes_;      // trials waiting for a checkpoint from the driver
  std::string owned_work_dir_;     // a temp work folder this actor made, removed at exit

 public:
  ~Actor() {
    saves_.clear();  // their uploads need transfer_, which goes first
    resumes_.clear();
    transfer_.reset();
    std::error_code ec;
    if (!owned_work_dir_.empty()) std::filesystem::remove_all(owned_work_dir_, ec);
  }
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
