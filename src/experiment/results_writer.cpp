#include "experiment/results_writer.hpp"

#include <cmath>
#include <filesystem>

#include "packtune/error.hpp"

namespace packtune {
namespace fs = std::filesystem;

void ResultsWriter::check_fresh(const std::string& dir) {
  if (fs::exists(fs::path(dir) / "results.jsonl")) {
    throw InputError("--out " + dir + ": already holds results.jsonl; choose another --out or "
                     "remove the old results");
  }
  if (fs::exists(dir) && !fs::is_directory(dir)) {
    throw InputError("--out " + dir + ": exists and is not a directory");
  }
}

ResultsWriter::ResultsWriter(const std::string& dir, const nlohmann::json& config_as_run,
                             std::string metric, tuners::Mode mode)
    : dir_(dir), metric_(std::move(metric)), mode_(mode) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw Error("--out " + dir_ + ": cannot create the directory (" + ec.message() + ")");
  std::ofstream(fs::path(dir_) / "config.json") << config_as_run.dump(2) << "\n";
  results_.open(fs::path(dir_) / "results.jsonl", std::ios::out | std::ios::trunc);
  if (!results_) throw Error(dir_ + "/results.jsonl: cannot open for writing");
}

void ResultsWriter::write(const ReportRow& row, const tuners::TrialConfig& config) {
  nlohmann::json line;
  line["trial"] = row.trial;
  line["budget"] = row.budget;
  for (const auto& [name, value] : row.metrics) {
    // JSON has no NaN; a diverged trial's metric is written as null.
    line[name] = std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
  }
  line["final"] = row.final;
  line["wall_time"] = row.wall_time;
  line["train_seconds"] = row.train_seconds;
  line["actor"] = row.actor;
  line["unit_size"] = row.unit_size;
  // Every trial's hyper-parameters (fixed and sampled), not only the best's: enough to re-run any trial elsewhere
  // (bench/peer_bench trains the same trials in a plain PyTorch loop from these).
  line["config"] = tuners::to_json(config);
  results_ << line.dump() << "\n";
  results_.flush();
  if (!results_) throw Error(dir_ + "/results.jsonl: write failed (disk full?)");
  ++rows_;

  auto it = row.metrics.find(metric_);
  if (it == row.metrics.end()) return;
  if (!best_ || tuners::better(it->second, best_->value, mode_) ||
      (it->second == best_->value && row.budget > best_->budget)) {
    best_ = Best{row.trial, it->second, row.budget, config};
  }
}

void ResultsWriter::write_best() const {
  if (!best_) return;
  nlohmann::json out;
  out["trial"] = best_->trial;
  out["config"] = tuners::to_json(best_->config);
  out["metric"] = metric_;
  out["value"] = best_->value;
  out["budget"] = best_->budget;
  const auto tmp = fs::path(dir_) / "best.json.tmp";
  std::ofstream(tmp) << out.dump(2) << "\n";
  fs::rename(tmp, fs::path(dir_) / "best.json");
}

}  // namespace packtune
