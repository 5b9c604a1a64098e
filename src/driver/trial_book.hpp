#pragma once
// The driver's book of trials and its queue of jobs: the jobs the tuner gave that wait for an
// actor, and for each trial its config, seed and shape, where its job runs, how far it got,
// and how often it lost its actor or ran out of memory. A trial that cannot go on counts as
// failed; the book says which failed results the tuner must hear. No sockets, no planner, no
// tuner: the driver places, sends and tells; this only keeps the books.
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "packing/memory_model.hpp"
#include "spec/trial_spec.hpp"
#include "tuners/tuner.hpp"

namespace packtune {

struct TrialState {
  tuners::TrialConfig sampled;  // what the tuner chose
  // Fixed model values overlaid with the sample; shared, and replaced (never changed) when
  // the trial is reconfigured: the record thread writes rows from it after the loop went on.
  std::shared_ptr<const tuners::TrialConfig> full = std::make_shared<const tuners::TrialConfig>();
  spec::TrialSpec spec;         // `full` parsed, once: what its actor trains
  std::uint64_t seed = 0;
  packing::TrialShape shape;  // what the planner knows of it
  int out_of_memory = 0;      // how often its unit ran out of memory
  int actor = -1;             // where its job runs; -1: none does
  double job_budget = 0;
  double reached = 0;
  double reported = -1;  // the highest budget it has a row in results.jsonl for; -1: none
  double last_metric = std::numeric_limits<double>::quiet_NaN();
  int restarts = 0;
  std::uint64_t lease = 0;   // the running job's Assign.lease
  double resume_budget = 0;  // the checkpoint budget the running job should start from
  bool start_checked = true;  // whether the running job's first report was checked
  bool failed = false;        // it cannot go on
  std::string unit;           // the running job's fused unit (Assign.unit), for results.jsonl
  double job_start = -1;      // when the running job was assigned, seconds since the experiment started
  // Population-based training: the trial goes on from another's checkpoint (Job::exploit),
  // until its first report, which records it. -1: it goes on from its own.
  tuners::TrialId exploited_from = -1;
  double exploited_at = 0;  // the donor's budget
};

class TrialBook {
 public:
  using TrialId = tuners::TrialId;
  using Job = tuners::Job;

  struct Limits {
    int max_restarts = 2;       // a trial restarted more often after its actor died fails
    int max_out_of_memory = 3;  // a trial whose unit ran out of memory more often fails
  };
  // A trial's spec and shape from its full config, which is parsed here and nowhere else;
  // throws InputError for a config that is no model.
  struct Described {
    spec::TrialSpec spec;
    packing::TrialShape shape;
  };
  using Describe = std::function<Described(const tuners::TrialConfig& full)>;

  // `model`: the fixed hyper-parameters every sample is overlaid on; `seed`: the
  // experiment's, from which each trial's own is derived.
  TrialBook(tuners::TrialConfig model, std::uint64_t seed, Describe describe, Limits limits);
  TrialBook(tuners::TrialConfig model, std::uint64_t seed, Describe describe)
      : TrialBook(std::move(model), seed, std::move(describe), Limits{}) {}

  const Limits& limits() const { return limits_; }

  // A failed result the tuner must hear: `trial` reached `budget`, with no metric.
  struct Failure {
    TrialId trial = -1;
    double budget = 0;
  };

  // --- the queue ---------------------------------------------------------------------------

  bool queue_empty() const { return queue_.empty(); }
  std::size_t queued() const { return queue_.size(); }
  void enqueue(Job job) { queue_.push_back(std::move(job)); }
  const Job& next() const { return queue_.front(); }
  const std::deque<Job>& queue() const { return queue_; }
  Job take_next();
  // The queued jobs of these trials go first, in their order; false when none is behind a job
  // of another trial.
  bool move_to_front(const std::set<TrialId>& trials);

  // --- trials ------------------------------------------------------------------------------

  struct Opened {
    TrialState* trial = nullptr;    // nullptr: the trial failed
    std::optional<Failure> failure;  // its config is no model: the job left the queue
  };
  // The trial of the next job, made when it is first seen: the fixed model overlaid with the
  // sample, its seed, its shape.
  Opened open_next();
  // A trial a resumed experiment knows from its journal: made as open_next() would make it,
  // without a job in the queue. nullptr when its config is no model.
  TrialState* remember(const Job& job);
  // The counts of a resumed experiment's journal.
  void restore_counts(std::int64_t completed_jobs, int failed_trials) {
    completed_jobs_ = completed_jobs;
    failed_trials_ = failed_trials;
  }
  // The next job leaves the queue to run on `actor`, from scratch unless the caller says
  // otherwise (TrialState::reached).
  Job start_next(int actor);

  // The trial whose job runs on `actor` under `lease`, or nullptr: a report of a job that
  // was stopped or given to another actor since.
  TrialState* running_on(TrialId id, int actor, std::uint64_t lease);
  TrialState* running_on(TrialId id, int actor);
  const TrialState& at(TrialId id) const { return trials_.at(id); }
  const std::map<TrialId, TrialState>& trials() const { return trials_; }

  // The trial's job ended (it reached its budget, was stopped, or `failed`); the tuner hears
  // its result from the caller.
  TrialState& finish(TrialId id, bool failed = false);
  // Its actor died: it goes back to the front of the queue, from its checkpoint at budget
  // `checkpoint` when it has one, unless it lost its actor too often.
  std::optional<Failure> lost_actor(TrialId id, std::optional<double> checkpoint);
  // Its unit ran out of memory: to the front of the queue as above, unless that happened
  // too often.
  std::optional<Failure> out_of_memory(TrialId id, std::optional<double> checkpoint);
  // The trial cannot go on.
  Failure give_up(TrialId id, const std::string& why);
  // Population-based training's exploit: the trial goes on with `config` (its donor's,
  // explored), from its donor's checkpoint. Its shape follows the new config; false and
  // `why` when that config is no model.
  bool retarget(TrialId id, const tuners::TrialConfig& config, std::string& why);

  std::int64_t completed_jobs() const { return completed_jobs_; }
  int failed_trials() const { return failed_trials_; }
  // Why the last trial that failed did ("trial N ..."); empty while none failed in this process.
  const std::string& last_failure() const { return last_failure_; }
  // Jobs on actors now; counted as they start and end, as the driver asks after every job.
  int running() const { return running_; }
  // Jobs started by this process (each took a lease).
  std::uint64_t started_jobs() const { return next_lease_; }

 private:
  void requeue(TrialId id, const TrialState& trial, bool from_checkpoint);
  // The trial's state, made on first sight; false when its config is no model (`why`).
  bool make(const Job& job, TrialState*& trial, std::string& why);
  // Its config and what follows from it: the full config and the shape.
  bool configure(TrialState& trial, const tuners::TrialConfig& config, std::string& why);
  // The trial's job no longer runs on an actor.
  void leave_actor(TrialState& trial);

  tuners::TrialConfig model_;
  std::uint64_t seed_;
  Describe describe_;
  Limits limits_;
  std::map<TrialId, TrialState> trials_;
  std::deque<Job> queue_;
  std::int64_t completed_jobs_ = 0;
  std::uint64_t next_lease_ = 0;
  int failed_trials_ = 0;
  std::string last_failure_;
  int running_ = 0;
};

}  // namespace packtune
