#pragma once
// The tuner as the driver sees it during a run that can be resumed: every job it gives and
// every report and result it hears go through here into the Journal, with the results.jsonl
// row each report produced and each checkpoint the store recorded.
//
// replay() feeds a journal to a fresh tuner made with the same config and seed: the jobs it
// gives again must be the jobs the journal holds, so the tuner ends in the state the killed
// driver's was in. That asks two things of a tuner (docs/tuners.md): the same calls give the
// same answers (randomness from its seed only), and a next_job() that returns Wait or
// Finished changes nothing, because those calls are not journaled (a waiting driver asks
// twenty times a second).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "driver/journal.hpp"
#include "driver/record_thread.hpp"
#include "experiment/results_writer.hpp"
#include "packtune/error.hpp"
#include "tuners/job_rules.hpp"
#include "tuners/tuner.hpp"

namespace packtune {

class TunerJournal {
 public:
  using TrialId = tuners::TrialId;
  using Job = tuners::Job;

  // Both must outlive this. `journal` may be null: nothing is written (packtune simulate).
  TunerJournal(tuners::Tuner& tuner, Journal* journal) : tuner_(tuner), journal_(journal) {}
  // The driver's: entries are written by `records`' thread, each report's results.jsonl line
  // by `results` there too. Without `records` they are written at once; without `results`
  // a row goes into the journal only. All must outlive this.
  void set_journal(Journal* journal, ResultsWriter* results = nullptr, RecordThread* records = nullptr) {
    journal_ = journal;
    results_ = results;
    records_ = records;
  }
  // From here on every job the tuner gives is held to JobRules: a tuner that breaks one (a
  // plugin's bug) stops the run with an Error naming it.
  void check_jobs(const std::string& tuner, double max_budget) {
    rules_.emplace(tuner, max_budget);
    name_ = tuner;
  }
  // Reads nothing the journal must hold: no entry.
  std::optional<double> planned_budget() const { return tuner_.planned_budget(); }

  Job next_job();
  // `row`: the report's results.jsonl row, or none (a report of a budget it had one for).
  using Row = std::optional<ResultsWriter::Row>;
  tuners::Decision on_report(TrialId trial, double budget, double metric, Row row);
  // `row`: the final report's results.jsonl row, or none (a stopped trial's last report was
  // journaled already; a failed job has none). `failed`: the trial cannot go on.
  void on_result(TrialId trial, double budget, double metric, Row row, bool failed);
  // The store holds `path`, the trial's checkpoint at `budget`.
  void on_checkpoint(TrialId trial, const std::string& path, double budget);
  // The experiment ended: resuming it has nothing left to do.
  void on_finished(std::int64_t jobs);

  struct TrialProgress {
    Job job;                  // its last job (config, target budget)
    bool running = false;     // the job has no result yet
    double reported = -1;     // the highest budget it has a row for; -1: none
    double last_metric = std::numeric_limits<double>::quiet_NaN();
    bool stopped = false;     // its last report made the tuner stop it, and no result followed
  };
  struct Checkpoint {
    TrialId trial = -1;
    std::string path;
    double budget = 0;
  };
  struct Recovered {
    std::map<TrialId, TrialProgress> trials;  // every trial the tuner started
    std::vector<Job> in_flight;               // jobs without a result, in the order given
    std::vector<nlohmann::json> rows;         // results.jsonl as the journal has it
    std::vector<Checkpoint> checkpoints;      // in the order the store recorded them
    std::int64_t results = 0;                 // jobs that ended
    int failed = 0;                           // of them, failed trials
    double wall_time = 0;                     // the last row's
    bool finished = false;
    std::int64_t finished_jobs = 0;
  };
  // Replays `entries` (Journal::read, the header first) into the tuner without writing them
  // again. Throws Error when the tuner answers otherwise than the journal says it did.
  Recovered replay(const std::vector<nlohmann::json>& entries);

 private:
  // Runs `write` (which formats and appends entries) on the record thread, or at once.
  void post(RecordThread::Task write);
  void write(nlohmann::json entry);
  // {"KEY":value,"row":row} (no "row" when empty), the bytes write() would give that object:
  // every KEY sorts before "row". `value` is JSON text (util/json_object_text.hpp). `row`
  // is formatted here, and appended to results.jsonl too. The record thread's.
  void write_entry(const char* key, std::string_view value, const Row& row = std::nullopt);

  tuners::Tuner& tuner_;
  Journal* journal_;
  ResultsWriter* results_ = nullptr;
  RecordThread* records_ = nullptr;
  std::optional<tuners::JobRules> rules_;
  std::string name_;  // the tuner's, for errors a plugin throws without saying whose they are

  // Calls into the tuner; a std::exception that is not packtune's (a plugin's) says which
  // tuner and call it came from.
  template <class F>
  auto call(const char* what, F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw Error("tuner " + (name_.empty() ? std::string("?") : name_) + ": " + what + " failed: " + e.what());
    }
  }
};

}  // namespace packtune
