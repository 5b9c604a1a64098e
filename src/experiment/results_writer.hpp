#pragma once
// The results directory: results.jsonl (one line per report), best.json, and config.json (the
// config as run). The driver appends a report's line, journals it (driver/journal.hpp), and
// flushes results.jsonl after the journal's commit: the file only ever holds whole lines, and
// only reports a resumed run will not redo.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiment/best_report.hpp"
#include "experiment/line_log.hpp"
#include "tuners/trial_config.hpp"
#include "tuners/tuner.hpp"

namespace packtune {

struct ReportRow {
  tuners::TrialId trial = -1;
  double budget = 0;
  std::map<std::string, double> metrics;
  bool final = false;
  double wall_time = 0;      // seconds since the experiment started
  double train_seconds = 0;  // seconds the actor spent on this trial in this job
  int actor = -1;
  int unit_size = 1;         // members of the fused unit it trained in (1: alone)
  // The planner's unit the job trained in ("u12"; members share it) and when the job was
  // assigned: report.html's timeline. Empty and -1: not known (not written).
  std::string unit;
  double job_start = -1;
  // The first report after population-based training's exploit: whose checkpoint, at which
  // budget, the trial went on from (its config is the new one). -1: none.
  tuners::TrialId exploited_from = -1;
  double exploited_at = 0;
};

class ResultsWriter {
 public:
  // Throws InputError for an --out no run can make its folder: empty, a file, a link to nothing.
  // Cheap: the CLI asks before it reads the data or starts an export.
  static void check_out(const std::string& dir);
  // Creates `dir` for a new run (check_out first), or throws InputError. Returns the outermost
  // folder it made:
  // `dir`, or the first of its parents that was missing too (--out a/b/c where a was not
  // there: a); empty when `dir` was there. Nothing is written into it: the driver locks the
  // folder first (two drivers may start on one --out).
  static std::string create_folder(const std::string& dir);
  // Removes `dir` and its parents up to `outermost` (create_folder's answer), each only if it
  // is empty: a run that leaves its folder as it found it leaves no parent it made either.
  static void remove_made_folders(const std::string& dir, const std::string& outermost);
  // Throws InputError when `dir` already holds a file or folder a run writes (an earlier run's,
  // or the user's: a new run never replaces one), or when it cannot be created or written:
  // before any actor starts, not at the first report.
  static void check_fresh(const std::string& dir);
  // The first of results_folder::kAll that `dir` holds (a link to nothing too), the journal first.
  static std::optional<std::string> occupied_by(const std::string& dir);

  // A new run: writes config.json and an empty results.jsonl. `final_budget`: best_budget's
  // (best_report.hpp), under which best() is chosen.
  ResultsWriter(const std::string& dir, const nlohmann::json& config_as_run,
                std::string metric, tuners::Mode mode, double final_budget = 0);
  // config.json as the journal's header holds it: a resume rewrites one that was damaged,
  // edited or deleted. Returns whether it did.
  static bool restore_config(const std::string& dir, const nlohmann::json& config_as_run);
  // results.jsonl as the journal's rows hold it: a resume of a finished run rewrites one that
  // was damaged, edited or deleted. True when it did.
  static bool restore_rows(const std::string& dir, const std::vector<nlohmann::json>& rows);
  // A resumed run: results.jsonl is rewritten to hold exactly `rows`, the journal's.
  ResultsWriter(const std::string& dir, const std::vector<nlohmann::json>& rows, std::string metric,
                tuners::Mode mode, double final_budget = 0);
  ~ResultsWriter();
  ResultsWriter(const ResultsWriter&) = delete;
  ResultsWriter& operator=(const ResultsWriter&) = delete;

  // The results.jsonl line of a report, as nlohmann::json's dump() would write its object
  // (util/json_object_text.hpp).
  static std::string line(const ReportRow& row, const tuners::TrialConfig& config);
  // A trial's config as that line (and the journal) writes it.
  static std::string config_text(const tuners::TrialConfig& config);
  // A report's values and its trial's config, shared: the line is written later, on the
  // driver's record thread (driver/record_thread.hpp), and the config stays as it was.
  struct Row {
    ReportRow values;
    std::shared_ptr<const tuners::TrialConfig> config;
  };
  // Counts the report, and best() sees it at once; append_line() writes its line. The two
  // halves of append(), for a caller that writes on another thread.
  void count(const ReportRow& row, const tuners::TrialConfig& config);
  // Appends a row's line (line()); flush() writes it. The journal keeps the same text: one
  // serialization of each report, not two.
  void append_line(std::string_view text) { log_->append_text(text); }
  // count() and the line, at once.
  std::string append(const ReportRow& row, const tuners::TrialConfig& config);
  // Writes the lines appended since the last flush. On a failure (a full disk) the file is
  // cut back to its last whole line and Error names it.
  void flush();
  void write(const ReportRow& row, const tuners::TrialConfig& config) {
    append(row, config);
    flush();
  }

  struct Best {
    tuners::TrialId trial = -1;
    double value = 0;
    double budget = 0;
    tuners::TrialConfig config;
  };
  // The best report so far under the experiment's metric and mode (and final_budget).
  const std::optional<Best>& best() const { return best_; }
  // The best trial's test metrics (trial, budget, test_accuracy, test_loss), for best.json.
  void set_test(nlohmann::json test) { test_ = std::move(test); }
  const nlohmann::json& test() const { return test_; }
  void write_best() const;
  std::int64_t rows() const { return rows_; }
  const std::string& path() const { return path_; }
  // results.jsonl was deleted while the run writes it (LineLog::unlinked).
  bool unlinked() const { return log_ && log_->unlinked(); }

 private:
  // Counts the line (of a resumed run) and keeps it if it is the best so far.
  void take(const nlohmann::json& line);
  // Whether a report of `value` at `budget` is the best so far.
  bool beats_best(double value, double budget) const;
  std::string resume_advice() const;

  std::string dir_;
  std::string path_;
  std::string metric_;
  tuners::Mode mode_;
  double final_budget_ = 0;
  std::optional<LineLog> log_;  // set by each constructor, after config.json is written
  std::optional<Best> best_;
  nlohmann::json test_;
  std::int64_t rows_ = 0;
};

}  // namespace packtune
