#pragma once
// The driver's policy without sockets: admission, dispatch and rung re-plans, reports and
// results, actors and nodes that come and go, out-of-memory splits, resume, the final test,
// the status and the summary. It takes messages and the time, and hands the messages it
// answers with to a callback, so that a scenario (an actor killed, a partition, a pack that
// runs out of memory) runs as a unit test against a fake fleet in virtual time. The loop
// around it (driver.cpp) owns the sockets, the signals, the local actors' processes and the
// display.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "driver/actor_registry.hpp"
#include "driver/admission.hpp"
#include "driver/checkpoint_store.hpp"
#include "driver/final_models.hpp"
#include "driver/final_test.hpp"
#include "driver/journal.hpp"
#include "driver/record_thread.hpp"
#include "driver/placement.hpp"
#include "driver/profile_gate.hpp"
#include "driver/status_view.hpp"
#include "driver/trial_book.hpp"
#include "driver/tuner_journal.hpp"
#include "experiment/experiment_config.hpp"
#include "experiment/results_writer.hpp"
#include "experiment/trial_shape.hpp"
#include "protocol/protocol.hpp"
#include "tuners/tuner.hpp"

namespace packtune {

class DriverCore {
 public:
  using Clock = std::chrono::steady_clock;
  // Delivers a message to the peer of that ZeroMQ identity; a peer that is gone is the
  // heartbeat check's business, so delivery may fail silently.
  using Send = std::function<void(const std::string& identity, const protocol::Message& message)>;

  struct Options {
    std::string out_dir;
    std::int64_t train_images = 0;  // an epoch's images (training_images(config))
    // The log of the driver's own actor in slot i (node 0).
    std::function<std::string(int)> local_log_path = [](int) { return std::string(); };
    spec::InputShape input;  // the data as a model sees it (input_dims(config))
    std::string profile_cache_dir;  // throughput profiles kept across runs; empty: none
    bool fresh_profiles = false;    // keep profiles there, but take none from it
  };

  DriverCore(const ExperimentConfig& config, Options options, Send send, Clock::time_point now);
  ~DriverCore();
  DriverCore(const DriverCore&) = delete;
  DriverCore& operator=(const DriverCore&) = delete;

  // Where peers join (after the bind), for the lines that tell how; `curve`: they need --keys.
  void listening_on(const std::string& endpoint, bool curve);
  // A line per finished job, for displays without the table, which shows them otherwise.
  void show_job_lines(bool on) { job_lines_ = on; }

  // --- the results folder -----------------------------------------------------------------
  // Every call to the tuner goes through it; a resume replays the journal into it first.
  TunerJournal& tuning() { return tuning_; }
  // Runs on the record thread after each commit (the driver writes its log's lines there).
  // Before attach().
  void after_commit(std::function<void()> f) { after_commit_ = std::move(f); }
  // The folder's journal, results and checkpoint store, once the loop holds its lock.
  // The run's clock starts here.
  void attach(std::unique_ptr<Journal> journal, std::unique_ptr<ResultsWriter> results,
              std::unique_ptr<CheckpointStore> store, Clock::time_point now);
  // The tuner replayed the journal; the books, the store and the clock follow it.
  void restore(const TunerJournal::Recovered& recovered);
  // Makes what the journal took durable, then writes the results rows it holds, and returns
  // when they are written (driver/record_thread.hpp).
  void commit();
  // The loop's group commit: the record thread writes and commits what was taken so far,
  // while the loop goes on. Throws the failure of an earlier one.
  void commit_soon();
  // Whether entries wait for a commit.
  bool uncommitted() const { return records_ && records_->uncommitted(); }
  // Runs `task` (a log line of every job) on the record thread at the next commit, after the
  // entries taken before it; at once before attach().
  void later(RecordThread::Task task);
  Journal* journal() { return journal_.get(); }
  ResultsWriter* results() { return results_.get(); }
  CheckpointStore* store() { return store_.get(); }

  // --- peers and time ---------------------------------------------------------------------
  // The driver's own actors are node 0, with `actors` slots.
  void add_local_node(const std::string& host, Clock::time_point now);
  // Every message but a checkpoint transfer's. Only Hello and NodeHello are taken from a peer
  // that has not registered; a Hello again from a live actor retires its jobs first.
  void on_message(const std::string& identity, const protocol::Message& message, Clock::time_point now);
  // Whether the store may take a checkpoint transfer message (Offer, FetchChunk, Chunk) from
  // the socket `identity`: an Offer or a FetchChunk must carry a live actor's transfer token and
  // name a checkpoint of a trial it trains now (or tests), an Offer at a budget and size that
  // job may write; a Chunk must answer a pull of the store. A registered actor hears why it
  // was refused (Stored, Chunk); anyone else hears nothing. False for any other message.
  bool admit_transfer(const std::string& identity, const protocol::Message& message, Clock::time_point now);
  // A process of node 0 ended (the loop's supervisor saw it).
  void on_local_actor_exited(const protocol::ActorExited& exited, Clock::time_point now);
  // Retires actors and nodes silent past actor_timeout_seconds. A silent actor whose node
  // still speaks hangs: its node is told to kill it (KillActor), and so is the loop for the
  // driver's own (take_hung_local_actors), so that it restarts like a crashed one.
  void check_heartbeats(Clock::time_point now);
  // The router could not queue a message for `identity`: its pipe is full, the peer stopped
  // reading. At the next heartbeat check the peer goes out of service (a node with all its
  // actors), and its trials go back to the queue; heard again, it is asked to rejoin.
  void peer_stalled(const std::string& identity) { stalled_.insert(identity); }
  // The driver's own actors to kill since the last call (their slot and pid, and why).
  std::vector<protocol::KillActor> take_hung_local_actors() { return std::exchange(hung_local_, {}); }
  // The loop's turn after a batch of messages: silent peers, expired profile holds, and jobs
  // for actors with room. Returns true when the experiment is over.
  bool step(Clock::time_point now);
  // A heartbeat to every peer that was sent nothing for heartbeat_seconds.
  void send_heartbeats(Clock::time_point now);
  void shutdown_actors();

  // --- the end ----------------------------------------------------------------------------
  // The test of the best trial's final model on the test split, one ready actor at a time.
  // False when there is nothing to test (said why).
  bool test_wanted();
  // Sends the test to the next ready actor not asked yet; false when none is left.
  bool ask_next_tester(Clock::time_point now);
  bool test_answered() const { return final_test_.answered(); }
  bool tester_lost() const;
  // Records the answer for best.json; the run's exit code (0).
  int record_test();
  // No answer: the exit code, 130 when a signal cut the test short, else 1.
  int test_unanswered(bool interrupted);
  void on_finished() { tuning_.on_finished(book_.completed_jobs()); }
  StatusSnapshot status(Clock::time_point now) const;
  // The last lines of a run; `report_written`: report.html exists.
  void summarize(bool finished, bool report_written, Clock::time_point now);
  // Every trial failed (too little memory, a model the device cannot run): not a result.
  bool every_trial_failed() const { return !results_->best() && book_.failed_trials() > 0; }
  const std::string& last_failure() const { return book_.last_failure(); }

  // What the unit tests look at.
  const TrialBook& book() const { return book_; }
  const ActorRegistry& registry() const { return registry_; }
  const packing::Plan& plan() const { return placement_.plan(); }
  std::int64_t refused_reports() const { return refused_reports_; }
  const Admission& admission() const { return admission_; }

 private:
  using Job = tuners::Job;
  using TrialId = tuners::TrialId;

  void send(ActorState& actor, const protocol::Message& message);
  void send_to(const std::string& identity, const protocol::Message& message);
  template <class FirstMessage>
  bool refuse(const std::string& identity, const FirstMessage& hello);
  void on_actor_message(ActorState& actor, const protocol::Message& message);
  protocol::ExperimentSpec experiment_spec() const;
  protocol::Welcome welcome_of(const ActorState& actor) const;
  double seconds_since_start() const;

  // Reports, results and checkpoints (driver_core.cpp).
  void on_report(ActorState& actor, const protocol::Report& report);
  std::string report_refusal(const protocol::Report& report, const TrialState& trial) const;
  std::string offer_refusal(const ActorState& actor, const protocol::Offer& offer);
  std::string fetch_refusal(const ActorState& actor, const protocol::FetchChunk& fetch);
  ReportRow report_row(const ActorState& actor, const TrialState& trial, const protocol::Report& report) const;
  // `parks`: the job's last report; the actor keeps the trial in its unit (Assign.park).
  void finish_job(ActorState& actor, TrialId id, bool failed = false, TunerJournal::Row row = std::nullopt,
                  bool parks = false);
  void record_checkpoint(TrialId trial, const std::string& path, double budget);
  void on_checkpointed(const ActorState& actor, const protocol::Checkpointed& m);
  void on_trial_failed(ActorState& actor, const protocol::TrialFailed& m);
  // The first report of a job says where it started; false: the job must fail (an exploit
  // that did not start from its donor's weights).
  bool check_resumed(const protocol::Report& report, TrialState& trial);
  void on_final_checkpoint(TrialId id, double budget);
  std::optional<double> checkpoint_of(TrialId id) const;
  void tell_failed(const std::optional<TrialBook::Failure>& failure);

  // Actors and nodes coming and going (driver_peers.cpp).
  void on_node_message(NodeState& node, const protocol::Message& message);
  void on_node_revived(NodeState& node);
  void on_actor_exited(NodeState& node, const protocol::ActorExited& m);
  void ask_to_rejoin(ActorState& actor, const protocol::Message& message);
  void retire(ActorState& actor, const std::string& why);
  // The node and every live actor behind it, out of service together.
  void retire_node(NodeState& node, const std::string& why);
  // Whether `identity`, or the node it speaks through, is in unreadable_.
  bool unreadable(const std::string& identity) const;
  void kill_hung(const ActorState& actor, const std::string& why);
  std::string join_command() const;

  // Placement (driver_dispatch.cpp).
  bool dispatch();
  bool dispatch_jobs();
  void send_assigns();
  bool no_actor_left();
  bool replans_rungs() const;
  void start_next_job(int actor_id, TrialState& trial);
  void start_rung(Job first);
  protocol::Assign make_assign(const Job& job, TrialState& trial);
  void on_measured(const ActorState& actor, const protocol::Measured& m);
  void on_out_of_memory(ActorState& actor, const protocol::OutOfMemory& m);
  bool local_actors_settled();

  // Population-based training's exploits (driver_exploit.cpp). False: the trial failed and
  // the tuner heard so.
  bool adopt_exploit(const Job& job);
  bool restore_exploit(const Job& job, double reported);
  // Parked trials (protocol::Assign::park): they keep their place in the plan until their next
  // job goes on in it, or until they are sent out (Stop) to make room or because their unit
  // went on without them.
  std::optional<int> take_parked(TrialId id);
  bool release_parked_for_room();
  void stop_parked(const Placement::Released& released);

  // The end (driver_finish.cpp).
  void finish_checkpoints(bool finished);

  ExperimentConfig config_;
  Options options_;
  Send send_;
  std::string endpoint_;
  bool curve_ = false;
  bool job_lines_ = true;
  Clock::time_point now_;  // the time of the call being handled
  std::unique_ptr<tuners::Tuner> tuner_;
  TunerJournal tuning_;
  Placement placement_;  // the planner, the plan and the parked trials
  ActorRegistry registry_;
  ProfileGate profiles_;  // which actor profiles each new shape's throughput, and the answers
  TrialBook book_;        // the queue of jobs and the state of every trial
  std::unique_ptr<Journal> journal_;
  std::unique_ptr<ResultsWriter> results_;
  std::unique_ptr<CheckpointStore> store_;
  std::function<void()> after_commit_;
  std::unique_ptr<RecordThread> records_;  // writes into journal_ and results_: stops before them

  std::map<int, std::vector<protocol::Assign>> assigns_;  // this dispatch's jobs by actor, sent at its end
  std::vector<std::pair<int, protocol::Profile>> profile_asks_;  // sent after them, to the actors named

  // With keep_checkpoints "needed", the last checkpoints of this many best trials survive a run,
  // and as many finished trials keep their final models while it runs.
  static constexpr int kKeepBestCheckpoints = 3;
  FinalModels final_models_{kKeepBestCheckpoints, config_.mode};
  FinalTest final_test_;  // the test of the best trial's final model
  std::vector<std::string> actor_failures_;
  bool actor_input_error_ = false;  // an actor process exited with code 2 (bad input)
  std::string actor_said_;          // the last ActorFailed message
  std::set<std::string> stalled_;  // peer_stalled's, until the next heartbeat check
  // Peers out of service for a full queue, by their connection (a node's, or a direct
  // actor's), until a Heartbeat to them went through: what they say meanwhile does not bring
  // them back. The probe goes to `target` (a node's own identity, or the actor's) at one look
  // for silence; a send refused by then (peer_stalled) asks again at the next, else the peer
  // reads again. A node's sends are refused only when the driver's loop flushes them, after
  // the look: hence a look's wait.
  struct Probe {
    std::string target;
    bool sent = false;
  };
  std::map<std::string, Probe, std::less<>> unreadable_;
  std::int64_t refused_reports_ = 0;  // from retired actors, after a partition
  std::set<std::string> asked_to_hello_;  // unknown peers told to join again (Rejoin), once each
  Admission admission_;  // the refusals of what peers may not say, and their bounded log
  bool settled_ = false;
  Clock::time_point start_;
  Clock::time_point next_silence_check_;
  Clock::time_point last_heartbeat_;
  std::optional<Clock::time_point> alone_since_;  // since when no actor trains and none can come back
  std::vector<protocol::KillActor> hung_local_;   // for the loop's supervisor
};

// The first budget above `reported` at which an actor reports in a job to `job_budget`
// (pack_executor.cpp: every `report_every` below the job's budget, then at the budget).
double next_report(double report_every, double reported, double job_budget);

}  // namespace packtune
