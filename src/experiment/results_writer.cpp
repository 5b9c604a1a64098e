#include "experiment/results_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <variant>

#include "experiment/results_folder.hpp"
#include "packtune/error.hpp"
#include "util/json_object_text.hpp"

namespace packtune {
namespace fs = std::filesystem;

namespace {

// Writes a file whole or throws Error naming it: through a temporary of its own (made new, never
// through a link) and a rename, so a reader (or a resume) never sees half of it. A link at
// `path` is replaced, and what it named is left alone.
void write_file(const fs::path& path, const std::string& text) {
  const std::string tmp = path.string() + "." + std::to_string(::getpid()) + ".tmp";
  ::unlink(tmp.c_str());  // one a crash left: the name itself goes, never what a link names
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) throw Error(path.string() + ": cannot write beside it (" + std::strerror(errno) + ")");
  std::size_t done = 0;
  int error = 0;
  while (done < text.size()) {
    const auto n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n < 0 ? errno : EIO;
      break;
    }
    done += static_cast<std::size_t>(n);
  }
  ::close(fd);
  std::error_code ec;
  if (error != 0) {
    fs::remove(tmp, ec);
    throw Error(path.string() + ": cannot write (" + std::strerror(error) + "); is the disk full?");
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error(path.string() + ": cannot replace it (" + ec.message() + ")");
  }
}

// `dir` made absolute and without a trailing separator, so that its parents are its folders.
fs::path folder_path(const std::string& dir) {
  auto path = fs::absolute(dir).lexically_normal();
  if (path.filename().empty()) path = path.parent_path();
  return path;
}

}  // namespace

void ResultsWriter::check_out(const std::string& dir) {
  if (dir.empty()) throw InputError("run: --out is empty; give a folder");
  if (fs::exists(dir) && !fs::is_directory(dir)) {
    throw InputError("--out " + dir + ": exists and is not a directory");
  }
  if (std::error_code ec; fs::is_symlink(dir, ec) && !fs::exists(dir, ec)) {
    throw InputError("--out " + dir + ": is a link to nothing (" + fs::read_symlink(dir, ec).string() +
                     "); make the folder it names, or choose another --out");
  }
}

std::string ResultsWriter::create_folder(const std::string& dir) {
  check_out(dir);
  std::error_code ec;
  auto outermost = folder_path(dir);
  while (!fs::exists(outermost.parent_path(), ec) && outermost.has_relative_path()) outermost = outermost.parent_path();
  const bool created = fs::create_directories(dir, ec);
  if (ec) throw InputError("--out " + dir + ": cannot create the directory (" + ec.message() + ")");
  return created ? outermost.string() : std::string();
}

void ResultsWriter::remove_made_folders(const std::string& dir, const std::string& outermost) {
  if (outermost.empty()) return;
  std::error_code ec;
  for (auto path = folder_path(dir); path.has_relative_path(); path = path.parent_path()) {
    if (!fs::remove(path, ec) || path == fs::path(outermost)) return;  // not empty, or the last one made
  }
}

std::optional<std::string> ResultsWriter::occupied_by(const std::string& dir) {
  for (const auto name : results_folder::kAll) {
    // A link counts, even one to nothing: the run would write through it.
    std::error_code ec;
    const auto type = fs::symlink_status(fs::path(dir) / name, ec).type();
    if (!ec && type != fs::file_type::not_found) return std::string(name);
  }
  return std::nullopt;
}

void ResultsWriter::check_fresh(const std::string& dir) {
  // Any of what a run writes already there is an earlier run's (its journal is its record even
  // without results.jsonl) or the user's own file, and a new run would replace it.
  if (const auto name = occupied_by(dir)) {
    if (*name == results_folder::kJournal) {
      throw InputError("--out " + dir + ": already holds an earlier run (" + *name + "); choose another --out, or "
                       "continue that run with `packtune run --resume " + dir + "`");
    }
    throw InputError("--out " + dir + ": already holds " + *name + ", which a run writes; choose another --out, or "
                     "move " + *name + " out of it");
  }
  create_folder(dir);
  std::error_code ec;
  // Permissions alone do not tell (root ignores them; a read-only mount does not): try.
  // A name of its own (mkstemp): a file of the user's is never the probe.
  std::string probe = (fs::path(dir) / ".packtune-probe-XXXXXX").string();
  const int fd = ::mkostemp(probe.data(), O_CLOEXEC);
  const int error = fd < 0 ? errno : (::write(fd, "ok\n", 3) == 3 ? 0 : errno);
  if (fd >= 0) {
    ::close(fd);
    fs::remove(probe, ec);
  }
  if (error != 0) throw InputError("--out " + dir + ": cannot write there (" + std::strerror(error) + ")");
}

ResultsWriter::ResultsWriter(const std::string& dir, const nlohmann::json& config_as_run,
                             std::string metric, tuners::Mode mode, double final_budget)
    : dir_(dir), path_(results_folder::path(dir, results_folder::kResults)), metric_(std::move(metric)), mode_(mode),
      final_budget_(final_budget) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw Error("--out " + dir_ + ": cannot create the directory (" + ec.message() + ")");
  write_file(results_folder::path(dir_, results_folder::kConfig), config_as_run.dump(2) + "\n");
  log_.emplace(LineLog::create(path_, resume_advice()));
}

bool ResultsWriter::restore_config(const std::string& dir, const nlohmann::json& config_as_run) {
  const fs::path path = results_folder::path(dir, results_folder::kConfig);
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in && nlohmann::json::parse(text, nullptr, false) == config_as_run) return false;
  write_file(path, config_as_run.dump(2) + "\n");
  return true;
}

bool ResultsWriter::restore_rows(const std::string& dir, const std::vector<nlohmann::json>& rows) {
  const fs::path path = results_folder::path(dir, results_folder::kResults);
  // The rows' lines as the run wrote them (line() writes what dump() would), compared byte for
  // byte: a last line that lost its newline is torn to every reader, though it parses.
  std::string text;
  for (const auto& row : rows) text += row.dump() + "\n";
  std::ifstream in(path, std::ios::binary);
  if (in && std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()) == text) return false;
  write_file(path, text);
  return true;
}

ResultsWriter::ResultsWriter(const std::string& dir, const std::vector<nlohmann::json>& rows, std::string metric,
                             tuners::Mode mode, double final_budget)
    : dir_(dir), path_(results_folder::path(dir, results_folder::kResults)), metric_(std::move(metric)), mode_(mode),
      final_budget_(final_budget) {
  std::string text;
  for (const auto& row : rows) {
    text += row.dump() + "\n";
    take(row);
  }
  write_file(path_, text);
  log_.emplace(LineLog::reopen(path_, static_cast<long long>(text.size()), resume_advice()));
}

ResultsWriter::~ResultsWriter() = default;

std::string ResultsWriter::resume_advice() const {
  return "free space there, then continue with `packtune run --resume " + dir_ + "`";
}

std::string ResultsWriter::config_text(const tuners::TrialConfig& config) {
  util::JsonObjectText text;
  for (const auto& [name, value] : config) {
    std::visit([&text, &name = name](const auto& v) { text.add(name, v); }, value);
  }
  return text.text();
}

std::string ResultsWriter::line(const ReportRow& row, const tuners::TrialConfig& config) {
  util::JsonObjectText line;
  line.add("trial", row.trial).add("budget", row.budget);
  // JSON has no NaN: a diverged trial's metric is written as null.
  for (const auto& [name, value] : row.metrics) line.add(name, value);
  line.add("final", row.final)
      .add("wall_time", row.wall_time)
      .add("train_seconds", row.train_seconds)
      .add("actor", row.actor)
      .add("unit_size", row.unit_size);
  if (!row.unit.empty()) line.add("unit", row.unit);
  if (row.job_start >= 0) line.add("job_start", row.job_start);
  if (row.exploited_from >= 0) {
    util::JsonObjectText exploit;
    line.add_json("exploit", exploit.add("from_trial", row.exploited_from).add("from_budget", row.exploited_at).text());
  }
  // Every trial's hyper-parameters (fixed and sampled), not only the best's: enough to re-run any trial elsewhere
  // (bench/peer_bench trains the same trials in a plain PyTorch loop from these).
  line.add_json("config", config_text(config));
  return line.text();
}

void ResultsWriter::count(const ReportRow& row, const tuners::TrialConfig& config) {
  ++rows_;
  if (const auto it = row.metrics.find(metric_); it != row.metrics.end() && std::isfinite(it->second)) {
    if (beats_best(it->second, row.budget)) best_ = Best{row.trial, it->second, row.budget, config};
  }
}

std::string ResultsWriter::append(const ReportRow& row, const tuners::TrialConfig& config) {
  count(row, config);
  std::string text = line(row, config);
  append_line(text);
  return text;
}

void ResultsWriter::take(const nlohmann::json& line) {
  ++rows_;
  auto it = line.find(metric_);
  if (it == line.end() || !it->is_number()) return;
  const double value = it->get<double>();
  const double budget = line.at("budget").get<double>();
  // The config is parsed only for a new best.
  if (beats_best(value, budget)) {
    best_ = Best{line.at("trial").get<tuners::TrialId>(), value, budget,
                 tuners::config_from_json(line.at("config"), "results.jsonl: config")};
  }
}

bool ResultsWriter::beats_best(double value, double budget) const {
  return !best_ || outranks_best(value, budget, best_->value, best_->budget, mode_ == tuners::Mode::Max, final_budget_);
}

// results.jsonl is not fsynced: the journal is, and a resume rewrites this file from it.
void ResultsWriter::flush() { log_->flush(false); }

void ResultsWriter::write_best() const {
  if (!best_) return;
  nlohmann::json out;
  out["trial"] = best_->trial;
  out["config"] = tuners::to_json(best_->config);
  out["metric"] = metric_;
  out["value"] = best_->value;
  out["budget"] = best_->budget;
  if (!test_.is_null() && test_.value("trial", tuners::TrialId{-1}) == best_->trial) out["test"] = test_;
  write_file(results_folder::path(dir_, results_folder::kBest), out.dump(2) + "\n");
}

}  // namespace packtune
