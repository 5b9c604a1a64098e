#pragma once
// `packtune export DIR [--csv] [--output FILE]`: an experiment's results.jsonl as CSV, one row
// per report, each metric a column and the trial's config flattened into `config.NAME`
// columns, ready for pandas (`pd.read_csv`) or a spreadsheet. With `--mlflow [URI]` or
// `--tensorboard OUT`, the experiment goes to a tracker instead (cli/tracker_export.hpp).
#include <istream>
#include <ostream>
#include <string>
#include <vector>

namespace packtune::cli {

// Writes `jsonl` (results.jsonl's lines; `source` names it in errors) to `out` as CSV (RFC
// 4180: commas, quotes and newlines quoted; a missing or null value is an empty cell).
// Columns: the report's own fields in results.jsonl's order, then the metrics, then the
// config, each group in the order its keys first appear. Throws InputError naming the line of
// a line that is not a report.
void write_results_csv(std::istream& jsonl, const std::string& source, std::ostream& out);

// `args` are the arguments after "export"; returns the exit status.
int run_export_command(const std::vector<std::string>& args);

}  // namespace packtune::cli
