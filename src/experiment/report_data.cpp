#include "experiment/report_data.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "experiment/best_report.hpp"
#include "experiment/line_log.hpp"
#include "experiment/results_folder.hpp"
#include "packtune/error.hpp"

namespace packtune::report {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Budgets and times come out of the same arithmetic on both sides, but 0.75 may arrive as
// 0.7500000001.
bool same_value(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max({1.0, std::abs(a), std::abs(b)}); }

// The file's JSON lines. A last line without its newline is a write the driver has not
// finished (the report is rebuilt during the run) and is left out; any other bad line is
// damage the user must see.
std::vector<json> read_lines(const fs::path& path, const std::string& what_to_do) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot read it; " + what_to_do);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  std::vector<json> lines;
  std::size_t begin = 0;
  for (int number = 1; begin < text.size(); ++number) {
    const auto end = text.find('\n', begin);
    if (end == std::string::npos) break;  // torn: being written
    const auto line = text.substr(begin, end - begin);
    begin = end + 1;
    if (LineLog::blank(line)) continue;
    try {
      lines.push_back(json::parse(line));
    } catch (const json::exception&) {
      throw InputError(path.string() + ": line " + std::to_string(number) + " is not JSON; " + what_to_do);
    }
  }
  return lines;
}

std::optional<json> read_object(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  try {
    auto value = json::parse(in);
    if (value.is_object()) return value;
  } catch (const json::exception&) {
  }
  throw InputError(path.string() + ": not a JSON object; restore it or remove it and run `packtune report` again");
}

double number_or(const json& object, const char* key, double fallback) {
  auto it = object.find(key);
  return it != object.end() && it->is_number() ? it->get<double>() : fallback;
}

json number_json(double value) { return std::isfinite(value) ? json(value) : json(nullptr); }

struct Row {
  long long trial = -1;
  double budget = 0;
  double value = kNaN;  // the experiment's metric; NaN: missing or diverged
  double wall_time = 0;
  double train_seconds = 0;
  double job_start = -1;  // -1: written before results.jsonl had it
  std::string unit;
  int actor = -1;
  int unit_size = 1;
  bool final = false;
  json config;
  json exploit;  // population-based training: {from_trial, from_budget}, or null
};

Row parse_row(const json& line, const std::string& metric, const fs::path& path, std::size_t index) {
  if (!line.is_object() || !line.contains("trial") || !line["trial"].is_number_integer() ||
      !line.contains("budget") || !line["budget"].is_number()) {
    throw InputError(path.string() + ": report " + std::to_string(index + 1) +
                     " has no trial and budget; is this a packtune results.jsonl?");
  }
  Row row;
  row.trial = line["trial"].get<long long>();
  row.budget = line["budget"].get<double>();
  row.value = number_or(line, metric.c_str(), kNaN);
  row.wall_time = number_or(line, "wall_time", 0);
  row.train_seconds = number_or(line, "train_seconds", 0);
  row.job_start = number_or(line, "job_start", -1);
  if (auto it = line.find("unit"); it != line.end() && it->is_string()) row.unit = it->get<std::string>();
  row.actor = static_cast<int>(number_or(line, "actor", -1));
  row.unit_size = static_cast<int>(number_or(line, "unit_size", 1));
  row.final = line.value("final", false);
  row.config = line.value("config", json::object());
  if (auto it = line.find("exploit"); it != line.end() && it->is_object()) row.exploit = *it;
  return row;
}

bool better(double a, double b, bool maximize) { return maximize ? a > b : a < b; }

struct Trial {
  json config = json::object();
  std::vector<double> budgets, values, wall_times;  // one per report, as reported
  std::set<int> actors;
  double reached = -1;
  double value = kNaN;
  double best_value = kNaN;
  std::optional<double> bracket;  // the budget its first job trained to
  std::vector<double> job_budgets;  // the journal's jobs, in order
  std::set<double> ended;             // budgets at which one of its jobs ended (a final report)
  bool stopped = false;  // the tuner stopped it early
  bool failed = false;   // it could not be trained
  json why;              // why the sampler chose its config (null: at random)
  // Population-based training: each exploit ({budget: its first report's, from_trial,
  // from_budget}) and each config the trial trained with ({from: the budget it took over at,
  // config}), oldest first.
  json exploits = json::array();
  json schedule = json::array();
};

}  // namespace

json build_report_data(const std::string& dir) {
  const fs::path root(dir);
  if (!fs::is_directory(root)) {
    throw InputError(dir + ": no such directory; give the --out of a packtune run");
  }
  const fs::path results = results_folder::path(dir, results_folder::kResults);
  if (!fs::exists(results)) {
    throw InputError(results.string() + ": not there; is " + dir + " the --out of a packtune run?");
  }
  const auto lines = read_lines(results, "restore it or rerun the experiment (`packtune run --resume " + dir +
                                             "` rewrites it from the journal)");
  std::vector<json> journal;
  if (const fs::path path = results_folder::path(dir, results_folder::kJournal); fs::exists(path)) {
    journal = read_lines(path, "restore it, or move it away to report " + std::string(results_folder::kResults) +
                                   " alone");
  }
  json source = json::object();
  if (auto config = read_object(results_folder::path(dir, results_folder::kConfig))) {
    source = *config;
  } else if (!journal.empty() && journal.front().contains("config")) {
    source = journal.front()["config"];
  }
  const std::string metric = source.value("metric", std::string("val_accuracy"));
  const std::string mode = source.value("mode", std::string(metric == "val_accuracy" ? "max" : "min"));
  const bool maximize = mode == "max";
  const json budget = source.value("budget", json::object());
  const double max_budget = budget.is_object() ? number_or(budget, "max", kNaN) : kNaN;

  std::vector<Row> rows;
  rows.reserve(lines.size());
  for (std::size_t i = 0; i < lines.size(); ++i) rows.push_back(parse_row(lines[i], metric, results, i));

  std::map<long long, Trial> trials;
  bool finished = false;
  for (const auto& entry : journal) {
    if (!entry.is_object()) continue;
    if (auto it = entry.find("job"); it != entry.end() && it->is_object() && it->contains("trial")) {
      auto& t = trials[it->value("trial", -1LL)];
      const double b = number_or(*it, "budget", kNaN);
      if (!t.bracket && it->value("kind", std::string()) == "start") {
        t.bracket = b;
        t.why = it->value("why", json());
      }
      t.job_budgets.push_back(b);
      if (it->contains("config")) t.config = (*it)["config"];
    } else if (auto r = entry.find("report"); r != entry.end() && r->is_object() && r->value("stop", false)) {
      trials[r->value("trial", -1LL)].stopped = true;
    } else if (auto r = entry.find("result"); r != entry.end() && r->is_object() && r->value("failed", false)) {
      trials[r->value("trial", -1LL)].failed = true;
    } else if (entry.contains("finished")) {
      finished = true;
    }
  }

  // Jobs as time on actors: a trial's rows in file order, cut where a job ended (a final
  // report), a new job started (job_start) or the actor changed (a restart elsewhere).
  json segments = json::array();
  std::map<long long, std::size_t> open;  // trial -> index in segments of its open job
  std::map<long long, double> previous_budget;
  for (const auto& row : rows) {
    auto& t = trials[row.trial];
    if (!row.exploit.is_null()) {
      t.exploits.push_back({{"budget", row.budget},
                            {"from_trial", static_cast<long long>(number_or(row.exploit, "from_trial", -1))},
                            {"from_budget", number_or(row.exploit, "from_budget", 0)}});
    }
    if (!row.config.empty() && (t.schedule.empty() || t.schedule.back()["config"] != row.config)) {
      const double from = !row.exploit.is_null() ? number_or(row.exploit, "from_budget", 0)
                          : t.budgets.empty()    ? 0.0
                                                 : t.budgets.back();
      t.schedule.push_back({{"from", from}, {"config", row.config}});
    }
    if (!row.config.empty()) t.config = row.config;
    t.budgets.push_back(row.budget);
    t.values.push_back(row.value);
    t.wall_times.push_back(row.wall_time);
    if (row.actor >= 0) t.actors.insert(row.actor);
    if (row.budget >= t.reached) {
      t.reached = row.budget;
      t.value = row.value;
    }
    if (std::isfinite(row.value) && (!std::isfinite(t.best_value) || better(row.value, t.best_value, maximize))) {
      t.best_value = row.value;
    }
    if (row.final) t.ended.insert(row.budget);
    if (!t.bracket && row.final) t.bracket = row.budget;

    auto it = open.find(row.trial);
    bool fresh = it == open.end();
    if (!fresh) {
      const auto& s = segments[it->second];
      fresh = s["actor"] != row.actor || (row.job_start >= 0 && !same_value(s["start"].get<double>(), row.job_start));
    }
    if (fresh) {
      const double from = previous_budget.count(row.trial) ? previous_budget[row.trial] : 0.0;
      const double start = row.job_start >= 0 ? row.job_start : std::max(0.0, row.wall_time - row.train_seconds);
      segments.push_back({{"actor", row.actor}, {"trial", row.trial}, {"unit", row.unit}, {"unit_size", row.unit_size},
                          {"start", start}, {"end", row.wall_time}, {"from", from}, {"to", row.budget}});
      open[row.trial] = segments.size() - 1;
      it = open.find(row.trial);
    }
    auto& s = segments[it->second];
    s["end"] = row.wall_time;
    s["to"] = row.budget;
    s["unit_size"] = std::max(s["unit_size"].get<int>(), row.unit_size);
    if (!row.unit.empty()) s["unit"] = row.unit;
    previous_budget[row.trial] = row.budget;
    if (row.final) open.erase(it);
  }

  // Best so far against wall time: the reports in the order they arrived.
  std::vector<const Row*> by_time;
  for (const auto& row : rows) by_time.push_back(&row);
  std::stable_sort(by_time.begin(), by_time.end(),
                   [](const Row* a, const Row* b) { return a->wall_time < b->wall_time; });
  json best_over_time = json::array();
  double best = kNaN;
  for (const Row* row : by_time) {
    if (!std::isfinite(row->value)) continue;
    if (std::isfinite(best) && !better(row->value, best, maximize)) continue;
    best = row->value;
    best_over_time.push_back(
        {{"wall_time", row->wall_time}, {"value", row->value}, {"trial", row->trial}, {"budget", row->budget}});
  }

  // Rungs by bracket: a bracket is the budget its trials' first jobs trained to (Hyperband's
  // brackets start at different budgets; a repeated bracket of the same start joins the first).
  std::map<double, std::map<double, json>> rungs;  // start -> budget -> rung
  auto rung_of = [&rungs](double start, double b) -> json& {
    auto& bracket = rungs[start];
    for (auto& [key, rung] : bracket) {
      if (same_value(key, b)) return rung;
    }
    return bracket[b] = {{"budget", b}, {"trials", json::array()}, {"values", json::array()},
                         {"promoted", json::array()}, {"training", 0}};
  };
  json trial_list = json::array();
  for (auto& [id, t] : trials) {
    const double last_job = t.job_budgets.empty() ? t.reached : t.job_budgets.back();
    const bool at_max = std::isfinite(max_budget) && t.reached >= 0 && same_value(t.reached, max_budget);
    // A job that asks for more than the trial reported is still training (or was, when the driver stopped).
    const bool owes = t.reached < 0 || (last_job > t.reached && !same_value(last_job, t.reached));
    const bool running = !finished && !t.stopped && !t.failed && owes;
    const char* state = t.failed    ? "failed"
                        : at_max    ? "finished"
                        : running   ? "running"
                        : (finished || t.stopped) ? "stopped"
                                                  : "paused";
    if (t.bracket) {
      std::set<double> budgets(t.ended.begin(), t.ended.end());
      budgets.insert(t.job_budgets.begin(), t.job_budgets.end());
      for (const double b : budgets) {
        auto& rung = rung_of(*t.bracket, b);
        const bool ended = std::any_of(t.ended.begin(), t.ended.end(), [b](double e) { return same_value(e, b); });
        if (!ended) {
          if (running && same_value(b, last_job)) rung["training"] = rung["training"].get<int>() + 1;
          continue;
        }
        double value = kNaN;
        for (std::size_t i = 0; i < t.budgets.size(); ++i) {
          if (same_value(t.budgets[i], b)) value = t.values[i];
        }
        const bool promoted = std::any_of(t.job_budgets.begin(), t.job_budgets.end(),
                                          [b](double j) { return j > b && !same_value(j, b); }) ||
                              (t.reached > b && !same_value(t.reached, b));
        rung["trials"].push_back(id);
        rung["values"].push_back(number_json(value));
        rung["promoted"].push_back(promoted);
      }
    }
    json values = json::array();
    for (const double v : t.values) values.push_back(number_json(v));
    trial_list.push_back({{"trial", id},
                          {"config", t.config},
                          {"budgets", t.budgets},
                          {"values", values},
                          {"wall_times", t.wall_times},
                          {"reached", t.reached >= 0 ? json(t.reached) : json(nullptr)},
                          {"value", number_json(t.value)},
                          {"best_value", number_json(t.best_value)},
                          {"bracket", t.bracket ? json(*t.bracket) : json(nullptr)},
                          {"why", t.why},
                          {"jobs", std::max<std::size_t>(t.job_budgets.size(), t.ended.size())},
                          {"actors", t.actors},
                          {"state", state}});
    if (!t.exploits.empty()) {
      trial_list.back()["exploits"] = t.exploits;
      trial_list.back()["schedule"] = t.schedule;
    }
  }
  json brackets = json::array();
  for (auto& [start, by_budget] : rungs) {
    json list = json::array();
    for (auto& [b, rung] : by_budget) list.push_back(std::move(rung));
    brackets.push_back({{"start", start}, {"rungs", std::move(list)}});
  }

  const std::string tuner =
      source.contains("tuner") && source["tuner"].is_object() ? source["tuner"].value("name", std::string()) : "";
  json best_json = nullptr;
  if (auto file = read_object(results_folder::path(dir, results_folder::kBest))) {
    best_json = *file;
  } else {
    // A run that has not ended (or was killed) has no best.json yet: the driver's rule, over
    // the reports in results.jsonl's order, as its ResultsWriter took them.
    const double final_budget = best_budget(tuner, std::isfinite(max_budget) ? max_budget : 0.0);
    const Row* chosen = nullptr;
    for (const auto& row : rows) {
      if (!std::isfinite(row.value)) continue;
      if (!chosen || outranks_best(row.value, row.budget, chosen->value, chosen->budget,
                                   maximize, final_budget)) {
        chosen = &row;
      }
    }
    if (chosen) {
      best_json = {{"trial", chosen->trial}, {"value", chosen->value}, {"budget", chosen->budget},
                   {"config", chosen->config}, {"metric", metric}};
    }
  }
  return {{"format", 1},
          {"name", source.value("name", root.filename().string())},
          {"tuner", tuner},
          {"metric", metric},
          {"mode", mode},
          {"max_budget", number_json(max_budget)},
          {"budget_unit", budget.is_object() ? budget.value("unit", std::string("epochs")) : "epochs"},
          {"space", source.value("space", json::object())},
          {"finished", finished},
          {"elapsed", by_time.empty() ? 0.0 : by_time.back()->wall_time},
          {"reports", rows.size()},
          {"best", best_json},
          {"trials", trial_list},
          {"brackets", brackets},
          {"segments", segments},
          {"best_over_time", best_over_time}};
}

}  // namespace packtune::report
