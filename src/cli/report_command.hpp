#pragma once
// `packtune report DIR [--output FILE]`: DIR/report.html, the experiment's charts in one file
// that opens offline (experiment/report_page.hpp; docs/report.md).
#include <string>
#include <vector>

namespace packtune::cli {

// `args` are the arguments after "report"; returns the exit status.
int run_report_command(const std::vector<std::string>& args);

}  // namespace packtune::cli
