#pragma once
// The results directory: results.jsonl (one line per report, flushed as it comes, so a
// crash loses nothing already reported), best.json, and config.json (the config as run).
#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

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
};

class ResultsWriter {
 public:
  // Throws InputError when `dir` already holds results: a new run never overwrites one.
  static void check_fresh(const std::string& dir);

  ResultsWriter(const std::string& dir, const nlohmann::json& config_as_run,
                std::string metric, tuners::Mode mode);

  void write(const ReportRow& row, const tuners::TrialConfig& config);

  struct Best {
    tuners::TrialId trial = -1;
    double value = 0;
    double budget = 0;
    tuners::TrialConfig config;
  };
  // The best final report so far under the experiment's metric and mode.
  const std::optional<Best>& best() const { return best_; }
  void write_best() const;
  std::int64_t rows() const { return rows_; }

 private:
  std::string dir_;
  std::string metric_;
  tuners::Mode mode_;
  std::ofstream results_;
  std::optional<Best> best_;
  std::int64_t rows_ = 0;
};

}  // namespace packtune
