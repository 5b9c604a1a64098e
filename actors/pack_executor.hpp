#pragma once
// Trains every trial an actor holds, one round at a time: each member takes one step on the
// pack's shared data stream. Trials of one planner unit (same fusion_key: layer sequence and
// batch size; widths and optimizers may differ) train as one FusedGroup, a trial alone as a
// FusedGroup of one, and the groups step in turn (a mixed pack); with fuse off every trial is
// a group of one. Members join and leave between rounds without disturbing the others.
//
// Population-based training keeps a unit together across a generation's end: a job with `park`
// set does not leave its group at its last report but waits there, parked, for its next job
// (continue_parked), which goes on from the rows it holds, or from a parked donor's rows
// copied inside the group (FusedGroup::exploit): no checkpoint is read and nothing is
// re-fused. A group with parked members does not step while its other members are waiting
// at the same boundary (jobs that joined or went on since it last stepped); a member that
// was training on, or a Stop, sends the parked ones out, and their next jobs resume from
// their checkpoints (the same numbers).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "actors/checkpoint_file.hpp"
#include "actors/cuda_step.hpp"
#include "actors/fused_group.hpp"
#include "datasets/batch_stream.hpp"

namespace packtune::actors {

enum class BudgetUnit { Epochs, Steps };
BudgetUnit parse_budget_unit(const std::string& text);  // "epochs" | "steps"

// The message of an exception without LibTorch's C++ backtrace, fit for one log line.
std::string error_message(const std::exception& e);

struct PackJob {
  tuners::TrialId trial = -1;
  spec::TrialSpec spec;
  std::uint64_t seed = 0;
  double budget = 1;        // train until this budget is reached
  double report_every = 0;  // report at each multiple of this budget (0: only at the end)
  // budget.max, over which the trial's learning-rate schedule runs; 0: the job's budget.
  double max_budget = 0;
  tuners::TrialConfig config;  // the hyper-parameters as given, kept in checkpoints
  // Continue from this checkpoint instead of a fresh model (a promotion or a restart).
  std::shared_ptr<const TrialCheckpoint> resume;
  // Capture a checkpoint when the job reaches its budget (PackEvent::checkpoint).
  bool checkpoint = false;
  // Members a fused group of this shape may have (the planner's unit size); 0: no limit;
  // 1: the trial trains alone.
  int max_fused = 0;
  // The planner's fused unit: jobs with the same non-empty unit train in one FusedGroup
  // (their fusion keys must match). Empty: the first group of its fusion key with room
  // under max_fused.
  std::string unit;
  // At its last report the member stays in its group, parked, for continue_parked.
  bool park = false;
};

struct PackEvent {
  tuners::TrialId trial = -1;
  double budget = 0;
  Metrics metrics;
  bool final = false;
  double train_seconds = 0;  // this trial's share of the pack's wall time so far
  std::string error;         // set when training failed; the member has been removed
  bool out_of_memory = false;  // the failure was a full device (or the pack's memory budget)
  int unit_size = 1;  // members of the reporting trial's fused unit (1: alone)
  // The final event of a job with `checkpoint` set: host copies of the trial's state, ready
  // to be written while the pack trains on; or why it could not be captured.
  std::shared_ptr<TrialCheckpoint> checkpoint;
  std::string checkpoint_error;
};

class PackExecutor {
 public:
  // With `fuse` false every trial trains alone, as a group of one.
  PackExecutor(datasets::BatchStream& stream, BudgetUnit unit, bool fuse = true);

  // Throws InputError when `job.resume` does not fit the trial's architecture or optimizer,
  // or when `job.unit` names a unit of another fusion key; nothing is added then. A job whose checkpoint already reached its budget ends at once.
  void add(const PackJob& job);
  bool remove(tuners::TrialId trial);  // a parked member too
  bool contains(tuners::TrialId trial) const;
  std::size_t size() const { return members_.size(); }
  bool empty() const { return members_.empty() && finished_.empty(); }
  // Whether step_round has anything to do: false when every member is parked or waits for a
  // parked one's next job.
  bool busy() const;

  bool parked(tuners::TrialId trial) const;
  // The next job of a parked member, in place, when its group and budget are the parked
  // member's: `from` < 0 goes on from its own rows (its config unchanged), `from` >= 0 takes
  // the rows of member `from`, parked in the same group at `budget` and not stepped since,
  // with `job`'s config (an exploit). Returns false, with the parked member sent out, when it
  // cannot: the caller then resumes `job` from its checkpoint. `budget`: the checkpoint budget
  // the driver expects the job to start from.
  bool continue_parked(const PackJob& job, tuners::TrialId from, double budget);
  // Sends out every parked member (the driver retired this actor).
  void release_parked();
  // The driver's jobs of one dispatch have all arrived, for these groups (group_of): a parked
  // member of one of them, given none of the jobs, leaves, so that the group goes on without
  // it (the driver may not know yet that it parked).
  void end_batch(const std::set<std::string>& given);
  // The group a job names: "unit:<unit>", "solo:<trial>", or "" (the first of its key with room).
  std::string group_of(const PackJob& job) const;

  // One step for every member; returns the reports due and removes finished members.
  std::vector<PackEvent> step_round();

  std::int64_t steps_for(double budget, int batch_size) const;
  // The job's learning-rate schedule in the trial's steps: over max_budget, whatever the
  // job's own budget, so that a promoted trial follows the curve of one trained to the end.
  spec::ScheduleSteps schedule_steps(const PackJob& job) const;

  // A checkpoint of the member as it is now, between rounds (checkpoint_every): its budget is
  // the steps it took in the experiment's unit, a fraction of an epoch as often as not. A
  // restart from it is as exact as one from the end of a job. nullptr when the trial is not a
  // member or has not stepped since it joined.
  std::shared_ptr<TrialCheckpoint> checkpoint_now(tuners::TrialId trial) const;

  // How many fused groups and solo trials the pack holds now.
  std::size_t fused_groups() const { return groups_.size(); }
  // The specs of the members of the one group the pack holds, where it holds no other and none
  // of them is parked or has an end to report: a round of the pack is then a step of that unit,
  // which a throughput profile may time (ThroughputProfiler::PackUnit). Empty otherwise.
  std::vector<const spec::TrialSpec*> sole_unit() const;
  // Whether that unit's step is a captured CUDA graph: past its warm-up, so that a profile
  // timing its rounds need not warm it up again (ThroughputProfiler::PackUnit::warm).
  bool sole_unit_warm() const;
  // A member's parameters and buffers under solo state-dict names.
  std::vector<std::pair<std::string, torch::Tensor>> member_state(tuners::TrialId trial) const;

 private:
  struct Member {
    PackJob job;
    std::string group;  // the fused group's id in groups_
    std::vector<std::int64_t> report_steps;  // ascending, the last is the final step
    std::vector<double> report_budgets;      // the nominal budget of each report step
    std::size_t next_report = 0;
    double seconds = 0;
    nlohmann::json history = nlohmann::json::array();  // reports so far, for checkpoints
    bool parked = false;
    bool waiting = false;  // joined or went on since its group last stepped
    std::int64_t park_step = -1;  // the step it parked at; -1: it never parked
    double park_budget = 0;
    std::int64_t start_step = 0;  // the step its current job started from
  };

  std::int64_t step_of(const Member& m) const;
  // Report steps and budgets from `start` to the job's budget.
  void schedule(Member& m, std::int64_t start) const;
  Member* find(tuners::TrialId trial);
  struct GroupState {
    bool parked = false;    // a member is parked
    bool training = false;  // a member has trained since it joined or went on
  };
  // Every group that has members, in one pass over them.
  std::map<std::string, GroupState> group_states() const;
  void remove_parked_if(const std::function<bool(const Member&)>& leaves);
  std::shared_ptr<TrialCheckpoint> capture(const Member& m, double budget) const;
  // `during`: what the member was doing when it failed, for the error ("evaluating").
  void fail(std::vector<PackEvent>& events, tuners::TrialId trial, const std::exception& e,
            const char* during = nullptr);

  datasets::BatchStream& stream_;
  BudgetUnit unit_;
  bool fuse_;
  std::vector<Member> members_;
  // "unit:<unit>" for the planner's units, "<fusion key>#n" for the others.
  std::map<std::string, std::unique_ptr<FusedGroup>> groups_;
  std::int64_t next_group_ = 0;
  std::vector<PackEvent> finished_;  // jobs that ended when they were added
  UnitStreams streams_;  // on a GPU, each unit of a mixed pack steps on a stream of its own
};

}  // namespace packtune::actors
