#pragma once
// The protocol's messages between the driver and an actor: the handshake and the experiment
// it joins, the memory and throughput measurements the planner asks for, jobs and their
// reports, checkpoints inside a job, and the final test.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "protocol/protocol_version.hpp"
#include "protocol/trial_spec_wire.hpp"
#include "tuners/trial_config.hpp"

namespace packtune::protocol {

// What every actor of an experiment needs to know, sent once in Welcome.
struct ExperimentSpec {
  // The data set and the task: datasets::DataOptions as JSON (datasets::to_json), paths
  // absolute; every actor reads the same files from the same paths.
  std::string data;
  std::string device = "cpu";
  std::string budget_unit = "epochs";
  double report_every = 0;
  std::uint64_t data_seed = 0;
  double heartbeat_seconds = 1;
  std::string fuse = "auto";  // never | auto | always (the planner decides units; never: no fusing)
  // The driver's checkpoint store (DIR/checkpoints, absolute). An actor that finds
  // `store_token` in its `.store` file shares the driver's file system and reads and writes
  // the store directly; any other moves checkpoints over ZeroMQ (file_transfer.hpp).
  std::string checkpoint_dir;
  std::string store_token;
  std::int64_t actor_memory_bytes = 0;  // each actor's memory budget for trials; 0: the device's
  double checkpoint_every_seconds = 0;    // checkpoints inside a job this often; 0: none
  // A model plugin's absolute path, which the actor loads before it builds any model (the
  // same path on every machine, as the data files); empty: none.
  std::string model_plugin;
  // The config's "deterministic": a GPU actor takes LibTorch's deterministic settings
  // (actors::make_deterministic).
  bool deterministic = false;
  std::string precision = "auto";  // the config's (spec/precision.hpp)
  // budget.max: learning-rate schedules run over it (spec/lr_schedule.hpp).
  double max_budget = 0;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(data, device, budget_unit, report_every,
       data_seed, heartbeat_seconds, fuse, checkpoint_dir, actor_memory_bytes, store_token, checkpoint_every_seconds,
       model_plugin, deterministic, precision, max_budget);
  }
};

// actor -> driver: the first message of an actor.
struct Hello {
  std::uint32_t protocol_version = kProtocolVersion;
  std::string host;
  std::int64_t pid = 0;
  std::int32_t local_index = -1;  // its slot on the node that started it, else -1
  std::int32_t threads = 1;
  // The node that started it: 0 the driver's own, another a `packtune node` the driver
  // welcomed; -1 an actor started by hand.
  std::int32_t node_id = -1;

  template <class Archive>
  void serialize(Archive& ar) { ar(protocol_version, host, pid, local_index, threads, node_id); }
};

// driver -> actor: accepted; `device` is the actor's resolved device request.
struct Welcome {
  std::uint32_t protocol_version = kProtocolVersion;
  std::int32_t actor_id = 0;
  ExperimentSpec spec;
  // The actor's checkpoint transfers come from a socket of their own, which never said Hello:
  // each Offer and FetchChunk carries this secret, new with every Welcome, to name its actor.
  std::string transfer_token;

  template <class Archive>
  void serialize(Archive& ar) { ar(protocol_version, actor_id, spec, transfer_token); }
};

// actor -> driver: the actor loaded its data and device and can take trials.
struct Ready {
  std::string device;  // resolved, e.g. "cpu" or "cuda:1"
  // Memory for trials: the device's (shared by the actors on it) or the actor's own limit,
  // and what the actor holds before any trial (its data set). 0: unknown.
  std::int64_t capacity_bytes = 0;
  bool capacity_shared = true;  // the device's whole memory, to split among its actors
  std::int64_t base_bytes = 0;
  // What a step time depends on besides the trial's shape: the device's model ("NVIDIA H200",
  // or the CPU's model and the actor's threads), the LibTorch build, and the data as a model
  // reads it. The driver keeps profiles measured under one such context for later runs
  // (driver/profile_cache.hpp); empty: never cached.
  std::string device_model;
  std::string build;
  std::string data_context;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(device, capacity_bytes, capacity_shared, base_bytes, device_model, build, data_context);
  }
};

// actor -> driver: the calibration of the memory model: `members` trials of the shape with
// fusion key `key` needed `peak_bytes` at most (measured once per shape and actor).
struct Measured {
  std::string key;
  std::int32_t members = 1;
  std::int64_t peak_bytes = 0;

  template <class Archive>
  void serialize(Archive& ar) { ar(key, members, peak_bytes); }
};

// actor -> driver: these trials trained as one unit and ran out of memory; they have left
// the pack and need a place with more room.
struct OutOfMemory {
  std::vector<tuners::TrialId> trials;
  std::string message;
  std::vector<std::uint64_t> leases;  // each trial's Assign.lease

  template <class Archive>
  void serialize(Archive& ar) { ar(trials, message, leases); }
};

// driver -> actor: train `trial` until `budget` (a new trial, or a promotion).
struct Assign {
  tuners::TrialId trial = -1;
  tuners::TrialConfig config;  // the full hyper-parameters: fixed model values + sample
  double budget = 0;
  std::uint64_t seed = 0;
  // A promotion or a restart: the trial's checkpoints, newest first. The actor resumes from
  // the first one that loads, and trains from scratch (logging why) when none does.
  std::vector<std::string> resume_from;
  // The planner's unit: trials with the same unit train as one fused model. 1: the unit
  // trains as a plain model and nothing joins it; 0: no limit.
  std::int32_t max_fused = 0;
  std::string unit;
  // Capture a checkpoint at `budget`: false when no tuner decision can resume the trial.
  bool checkpoint = true;
  // The driver's number for this assignment. Everything the actor says of the job carries it:
  // a report of a job the driver has given to another actor since (after a partition, a
  // stop, a restart) names an older lease and is refused.
  std::uint64_t lease = 0;
  // Population-based training (actors/pack_executor.hpp): `park` keeps the trial in its unit
  // after this job, for its next; a parked trial's next job goes on in place when it starts
  // from `resume_budget` (resume_from's first), from its own rows or, with `exploit_from`
  // >= 0, from that member's rows in the same unit. Otherwise it loads resume_from.
  bool park = false;
  tuners::TrialId exploit_from = -1;
  double resume_budget = 0;
  // More Assigns of the same dispatch follow: the actor takes them all before it trains on, so
  // that the jobs the driver placed together start together (a unit's members at one step).
  bool more = false;
  // `config` as the driver parsed it when it first saw the trial: what the actor trains.
  spec::TrialSpec spec;

  template <class Archive>
  void serialize(Archive& ar) {
    ar(trial, config, budget, seed, max_fused, resume_from, unit, checkpoint, lease, park, exploit_from,
       resume_budget, more, spec);
  }
};

// driver -> actor: time fused steps of this shape (a trial's full hyper-parameters) for
// K = 1, 2, 4, ... up to `max_members`, until throughput stops growing or memory ends, in
// between the rounds of the pack the actor trains, whose own unit of the shape stands for its
// K; answered by Profiled. Sent after the Assigns of the shape's first job.
struct Profile {
  std::string key;  // the shape key the driver files the answer under
  tuners::TrialConfig config;
  std::int32_t max_members = 1;
  spec::TrialSpec spec;  // `config` parsed, as in an Assign

  template <class Archive>
  void serialize(Archive& ar) { ar(key, config, max_members, spec); }
};

// actor -> driver: seconds of one step for each measured K (K = 1: a plain model), or why
// the profile failed.
struct Profiled {
  std::string key;
  std::string device;
  std::vector<std::int32_t> members;
  std::vector<double> seconds;
  std::string error;
  // The last K is the largest that fit beside the actor's pack, not where gains ran out.
  bool cut_short = false;

  template <class Archive>
  void serialize(Archive& ar) { ar(key, device, members, seconds, error, cut_short); }
};

// driver -> actor: stop training `trial` now (the tuner stopped it early).
struct Stop {
  tuners::TrialId trial = -1;

  template <class Archive>
  void serialize(Archive& ar) { ar(trial); }
};

// actor -> driver: metrics of `trial` at `budget`; `final` ends the job.
struct Report {
  tuners::TrialId trial = -1;
  double budget = 0;
  std::map<std::string, double> metrics;
  bool final = false;
  double train_seconds = 0;
  std::string checkpoint;   // a final report: the checkpoint written at `budget`, or ""
  double start_budget = 0;  // the budget the job started from: a checkpoint's, 0 from scratch
  std::int32_t unit_size = 1;  // members of its fused unit when the reported step trained
  // A final report whose checkpoint could not be written: why. `disk_full`: its disk has no
  // room for it, and the experiment stops (docs/faults.md).
  std::string checkpoint_error;
  bool disk_full = false;
  std::uint64_t lease = 0;  // the job's Assign.lease

  template <class Archive>
  void serialize(Archive& ar) {
    ar(trial, budget, metrics, final, train_seconds, checkpoint, start_budget, unit_size, checkpoint_error, disk_full,
       lease);
  }
};

// actor -> driver: `trial` could not be trained; the message says why.
struct TrialFailed {
  tuners::TrialId trial = -1;
  std::string message;
  std::uint64_t lease = 0;

  template <class Archive>
  void serialize(Archive& ar) { ar(trial, message, lease); }
};

// actor -> driver: the actor cannot go on at all (no data, no device).
struct ActorFailed {
  std::string message;

  template <class Archive>
  void serialize(Archive& ar) { ar(message); }
};

// actor -> driver: a checkpoint inside a job (ExperimentSpec.checkpoint_every_seconds): the
// store holds `path`, the trial at `budget`, where a restart of the job resumes.
struct Checkpointed {
  tuners::TrialId trial = -1;
  std::uint64_t lease = 0;
  std::string path;
  double budget = 0;

  template <class Archive>
  void serialize(Archive& ar) { ar(trial, lease, path, budget); }
};

// driver -> actor, once the tuner is done: evaluate the best trial's final model on the test
// split, which selection never saw. `checkpoints` are the trial's, newest first; the first that
// loads is evaluated. Answered by Tested.
struct Test {
  tuners::TrialId trial = -1;
  tuners::TrialConfig config;  // the full hyper-parameters, as in its Assign
  std::uint64_t seed = 0;
  std::vector<std::string> checkpoints;
  spec::TrialSpec spec;  // `config` parsed, as in its Assign

  template <class Archive>
  void serialize(Archive& ar) { ar(trial, config, seed, checkpoints, spec); }
};

// actor -> driver: the test metrics (test_accuracy, test_loss) of the checkpoint at `budget`,
// or why there are none.
struct Tested {
  tuners::TrialId trial = -1;
  double budget = 0;
  std::map<std::string, double> metrics;
  std::string error;

  template <class Archive>
  void serialize(Archive& ar) { ar(trial, budget, metrics, error); }
};

}  // namespace packtune::protocol
