#pragma once
// The actor process's one object: its conversation with the driver (actor_process.cpp), its
// checkpoints, saved and resumed, in the driver's store or over ZeroMQ (actor_checkpoints.cpp),
// and what it measures for the planner and the tuner: memory, throughput, test accuracy
// (actor_measurements.cpp). Private to packtune-actor: run_actor (actor_process.hpp) is the way
// in. The files include LibTorch through the training engine's headers.
#include <chrono>
#include <cstdint>
#include <deque>
#include <future>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "actor_process/actor_process.hpp"
#include "actor_process/transfer_client.hpp"
#include "actors/checkpoint_file.hpp"
#include "actors/classifier.hpp"
#include "actors/memory_meter.hpp"
#include "actors/pack_executor.hpp"
#include "actors/throughput_profile.hpp"
#include "datasets/batch_stream.hpp"
#include "datasets/data_source.hpp"
#include "protocol/protocol.hpp"
#include "spec/precision.hpp"
#include "spec/trial_spec.hpp"

namespace packtune::actor_process {

class Actor {
 public:
  explicit Actor(const ActorOptions& options);
  ~Actor();
  Actor(const Actor&) = delete;
  Actor& operator=(const Actor&) = delete;

  int run();

 private:
  using Clock = std::chrono::steady_clock;

  struct Saved {
    std::string path;   // in the store; empty when it could not be written
    std::string error;  // why not
    bool disk_full = false;
  };

  struct PendingSave {
    protocol::Report report;
    std::future<Saved> path;
    bool inside_job = false;  // checkpoint_every's: the driver gets Checkpointed, not the report
  };

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

  struct ProfileTask {
    std::string key;
    std::string shape;  // the shape's key as this actor computes it (experiment/trial_shape.hpp)
    Clock::time_point asked;
    std::unique_ptr<actors::ThroughputProfiler> profiler;
  };

  // The conversation with the driver (actor_process.cpp).
  int serve(actors::PackExecutor& pack);
  // The lease of the trial's job (Assign.lease); `ended`: the job is over, forget it.
  std::uint64_t lease_of(tuners::TrialId trial, bool ended);
  // The driver retired this actor while it could not hear it and gave its jobs to others:
  // they are dropped (their reports would be refused) and the actor says Hello again.
  void join_again(actors::PackExecutor& pack, const std::string& reason);
  void start_trial(actors::PackExecutor& pack, const protocol::Assign& assign);
  // The driver's dispatch has all arrived (the last Assign had no `more`): parked members of
  // the units it gave jobs to, none their own, leave (PackExecutor::end_batch).
  void end_batch(actors::PackExecutor& pack);
  void report(const actors::PackEvent& event);
  // Reports, failures and memory exhaustion of a round of the pack, told the driver; whether
  // there were any.
  bool handle_round(const std::vector<actors::PackEvent>& events);

  // Checkpoints (actor_checkpoints.cpp).
  // Whether this actor sees the driver's checkpoint store (a local actor, a shared file
  // system) or must move checkpoints over ZeroMQ, keeping them meanwhile in its work folder.
  void open_checkpoint_store();
  // checkpoint_every: a member that trained that long since it joined or was last saved is
  // saved now, while the pack trains on, and the driver hears of it once the file is stored.
  void checkpoint_long_jobs(const actors::PackExecutor& pack);
  // Writes the checkpoint into the store, or into the work folder and then over to the driver's
  // store; returns its path in the store. The final report waits for it: a checkpoint the
  // driver does not hold yet cannot be promoted, so a dead actor loses none that could be.
  Saved save(const actors::TrialCheckpoint& checkpoint) const;
  // Sends the final reports whose checkpoints are written, in order; all of them when `wait`.
  bool send_saved(bool wait);
  // A checkpoint in the driver's store: read where it is, or fetched into the work folder first.
  actors::TrialCheckpoint read_from_store(const std::string& path);
  // Moves a resume on as far as it can without waiting; true once the trial is in the pack
  // (from a checkpoint, or from scratch when none could be used).
  bool advance_resume(actors::PackExecutor& pack, Resume& r);
  // Resumes r's trial from `file` (the checkpoint being tried, or its fetched copy); a torn,
  // corrupt or foreign file is never used, only logged.
  bool try_resume(actors::PackExecutor& pack, Resume& r, const std::string& file);
  void give_up_checkpoint(Resume& r, const std::string& why);
  // Resumes waiting for their checkpoints; a failure fails the trial, not the actor.
  void advance_resumes(actors::PackExecutor& pack);

  // Measurements (actor_measurements.cpp).
  // What the planner needs to know of this actor's memory.
  protocol::Ready memory_figures(const std::string& device, actors::MemoryMeter& meter);
  // Measures the memory of each new shape once (CPU: exact tensor counts), between rounds.
  void calibrate(const spec::TrialSpec& spec, torch::Device device);
  void queue_profile(const protocol::Profile& request);
  // One piece of profiling work per round of the pack: a memory calibration, or one K of a
  // throughput profile, which times the pack's own rounds where its one unit is of the shape
  // and of that K. Returns whether a message went out.
  bool advance_profiles(actors::PackExecutor& pack);
  // The best trial's final model on the test split (proto::Test): a plain model of its own,
  // outside the pack, once the tuner is done. The test split is read only now.
  protocol::Tested run_test(const protocol::Test& test);
  // The data set and task the driver sent (ExperimentSpec::data).
  datasets::DataOptions data_options() const;

  ActorOptions options_;
  zmq::context_t context_;
  zmq::socket_t socket_;
  int id_ = -1;
  protocol::ExperimentSpec spec_;
  std::string transfer_token_;  // the last Welcome's: names this actor's transfers to the driver
  std::map<tuners::TrialId, double> start_budget_;  // budget each running job started from
  std::map<tuners::TrialId, std::uint64_t> leases_;  // each job's Assign.lease
  std::map<tuners::TrialId, Clock::time_point> last_saved_;  // checkpoint_every's clock per job
  protocol::Hello hello_;  // said again to rejoin
  bool rejoining_ = false;  // said Hello again on the driver's Rejoin: its Welcome is awaited
  protocol::Ready ready_;
  std::string pack_device_ = "cpu";
  std::int64_t retained_heap_bytes_ = 0;  // counted in Ready.base_bytes on a CPU
  spec::Precision precision_ = spec::Precision::Fp32;  // what the run's precision is on this device
  spec::InputShape input_;
  std::set<std::string> profiled_;  // shape keys whose memory was measured or queued
  std::deque<spec::TrialSpec> calibrations_;  // memory calibrations not yet run
  std::deque<ProfileTask> profiles_;  // throughput profiles the driver asked for, in order
  std::deque<PendingSave> saves_;                   // final reports waiting for their file
  std::string local_checkpoints_;  // where save() writes: the store itself, or the work folder
  std::unique_ptr<TransferClient> transfer_;  // when the store is not on this machine
  const datasets::BatchStream* stream_ = nullptr;  // the pack's, once the data is loaded
  std::list<Resume> resumes_;      // trials waiting for a checkpoint from the driver
  std::set<std::string> batch_;  // the groups given jobs by the dispatch arriving now (Assign.more)
  std::string owned_work_dir_;     // a temp work folder this actor made, removed at exit
};

}  // namespace packtune::actor_process
