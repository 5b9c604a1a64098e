#include "cli/export_command.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "cli/tracker_export.hpp"
#include "experiment/results_folder.hpp"
#include "util/subcommand.hpp"
#include "packtune/error.hpp"

namespace packtune::cli {
namespace {

namespace fs = std::filesystem;
namespace po = boost::program_options;
using json = nlohmann::json;

// The fields every report line has (experiment/results_writer.cpp), first and in this order;
// any other top-level number or null is a metric.
const std::vector<std::string> kReportFields = {"trial", "budget", "final", "wall_time", "train_seconds", "actor",
                                                "unit_size"};
// Fields that later versions added (older files lack them): columns when present, never metrics.
const std::vector<std::string> kLaterFields = {"unit", "job_start"};

// Columns in the order they first appear, each once.
class Columns {
 public:
  void add(const std::string& name) {
    if (index_.emplace(name, names_.size()).second) names_.push_back(name);
  }
  const std::vector<std::string>& names() const { return names_; }
  bool has(const std::string& name) const { return index_.count(name) > 0; }

 private:
  std::vector<std::string> names_;
  std::map<std::string, std::size_t> index_;
};

// A nested config ({"optimizer": {"name": ...}}) becomes config.optimizer.name.
void flatten(const json& value, const std::string& prefix, std::map<std::string, json>& cells) {
  if (value.is_object() && !value.empty()) {
    for (const auto& [key, item] : value.items()) flatten(item, prefix + "." + key, cells);
  } else {
    cells[prefix] = value;
  }
}

// Not `quoted`: ADL would pick std::quoted for a non-const std::string.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos && (text.empty() || (text.front() != ' ' && text.back() != ' '))) {
    return text;
  }
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string cell(const json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return csv_field(value.get<std::string>());
  return csv_field(value.dump());  // numbers as they round-trip, booleans as true/false, lists as JSON
}

}  // namespace

void write_results_csv(std::istream& jsonl, const std::string& source, std::ostream& out) {
  std::vector<std::map<std::string, json>> rows;
  Columns fields, metrics, config;
  for (const auto& name : kReportFields) fields.add(name);
  std::string text;
  for (int line = 1; std::getline(jsonl, text); ++line) {
    if (text.empty()) continue;
    json report;
    try {
      report = json::parse(text);
    } catch (const json::exception& e) {
      // A last line without its newline is a write the driver has not finished (or a crash
      // tore); `packtune report` and --resume leave it out too.
      if (jsonl.eof()) break;
      throw InputError(source + ": line " + std::to_string(line) + " is not JSON (" + e.what() + ")");
    }
    if (!report.is_object() || !report.contains("trial") || !report.contains("budget")) {
      throw InputError(source + ": line " + std::to_string(line) +
                       " is not a report (no trial and budget); is this a packtune results.jsonl?");
    }
    std::map<std::string, json> cells;
    for (const auto& [key, value] : report.items()) {
      if (key == "config") {
        flatten(value, "config", cells);
        continue;
      }
      // Population-based training's lineage: exploit.from_trial and exploit.from_budget.
      if (key == "exploit" && value.is_object()) {
        flatten(value, "exploit", cells);
        for (const auto& [part, unused] : value.items()) fields.add("exploit." + part);
        continue;
      }
      cells[key] = value;
      const bool is_field =
          std::find(kReportFields.begin(), kReportFields.end(), key) != kReportFields.end();
      if (is_field) continue;
      if (std::find(kLaterFields.begin(), kLaterFields.end(), key) != kLaterFields.end()) {
        fields.add(key);
        continue;
      }
      // A column is a metric or a field by the first row that has it: a hand-edited value of
      // another kind does not make it a second column.
      if (!metrics.has(key) && !fields.has(key)) (value.is_number() || value.is_null() ? metrics : fields).add(key);
    }
    // Config columns in the order the first row holding them lists them (json sorts keys).
    for (const auto& [key, value] : cells) {
      if (key.rfind("config.", 0) == 0) config.add(key);
    }
    rows.push_back(std::move(cells));
  }
  std::vector<std::string> header = fields.names();
  header.insert(header.end(), metrics.names().begin(), metrics.names().end());
  header.insert(header.end(), config.names().begin(), config.names().end());
  for (std::size_t i = 0; i < header.size(); ++i) out << (i ? "," : "") << csv_field(header[i]);
  out << "\r\n";
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < header.size(); ++i) {
      auto it = row.find(header[i]);
      out << (i ? "," : "") << (it == row.end() ? "" : cell(it->second));
    }
    out << "\r\n";
  }
}

int run_export_command(const std::vector<std::string>& args) {
  util::Subcommand command("export",
                           "packtune export DIR [--csv] [--output FILE] | DIR --mlflow [URI] [--follow] | "
                           "DIR --tensorboard OUT [--follow]");
  command.positional("dir", "DIR", "an experiment's --out", "the --out of a packtune run");
  command.options()("csv", "CSV, one row per report (the default)")(
      "output,o", po::value<std::string>(), "write the CSV to FILE instead of stdout")(
      "mlflow", po::value<std::string>()->implicit_value(""),
      "to MLflow: one run per trial under a parent run, at tracking URI (default: a local store in ./mlruns)")(
      "tensorboard", po::value<std::string>(), "to TensorBoard: one event file per trial in folder OUT")(
      "follow", "with --mlflow or --tensorboard: export the reports as they arrive, until the run finishes");
  if (!command.parse(join_optional_value(args, "--mlflow", {"--output", "-o", "--tensorboard", "--dir"}, "--dir"))) {
    return 0;
  }
  const auto& vm = command.values();
  const auto dir = command.argument();
  const bool to_tracker = vm.count("mlflow") || vm.count("tensorboard");
  if (to_tracker && (vm.count("csv") || vm.count("output"))) {
    throw InputError("export: --csv and --output are for the CSV; --mlflow and --tensorboard write elsewhere");
  }
  if (vm.count("follow") && (!to_tracker || (vm.count("mlflow") && vm.count("tensorboard")))) {
    throw InputError("export: --follow goes with one of --mlflow and --tensorboard");
  }
  std::vector<std::string> follow;
  if (vm.count("follow")) follow.push_back("--follow");
  if (to_tracker) {
    int status = 0;
    if (vm.count("mlflow")) {
      const auto uri = vm["mlflow"].as<std::string>();
      std::vector<std::string> where = follow;
      if (!uri.empty()) where.insert(where.end(), {"--uri", uri});
      status = run_tracker_export("mlflow", dir, where);
    }
    if (status == 0 && vm.count("tensorboard")) {
      std::vector<std::string> where = follow;
      where.insert(where.end(), {"--out", vm["tensorboard"].as<std::string>()});
      status = run_tracker_export("tensorboard", dir, where);
    }
    return status;
  }
  const auto path = results_folder::path(dir, results_folder::kResults);
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot read it; is " + dir + " the --out of a packtune run?");
  if (!vm.count("output")) {
    write_results_csv(in, path, std::cout);
    std::cout.flush();
    if (!std::cout) throw Error("export: cannot write to stdout");
    return 0;
  }
  // Through a temporary and a rename: a spreadsheet open on FILE never sees half of it.
  const auto target = vm["output"].as<std::string>();
  const auto tmp = target + ".tmp";
  {
    std::ofstream file(tmp, std::ios::binary | std::ios::trunc);
    if (!file) throw InputError("--output " + target + ": cannot write there");
    write_results_csv(in, path, file);
    file.flush();
    if (!file) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw Error("--output " + target + ": cannot write (is the disk full?)");
    }
  }
  fs::rename(tmp, target);
  return 0;
}

}  // namespace packtune::cli
