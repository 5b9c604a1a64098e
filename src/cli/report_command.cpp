#include "cli/report_command.hpp"

#include <iostream>

#include <boost/program_options.hpp>

#include "util/subcommand.hpp"
#include "experiment/report_page.hpp"
#include "packtune/error.hpp"

namespace packtune::cli {

namespace po = boost::program_options;

int run_report_command(const std::vector<std::string>& args) {
  util::Subcommand command("report", "packtune report DIR [--output FILE]");
  command.positional("dir", "DIR", "an experiment's --out", "the --out of a packtune run");
  command.options()("output,o", po::value<std::string>(), "write the page to FILE instead of DIR/report.html");
  if (!command.parse(args)) return 0;
  const auto& vm = command.values();
  const auto written = report::write_report(command.argument(),
                                            vm.count("output") ? vm["output"].as<std::string>() : std::string());
  std::cout << written << "\n";
  return 0;
}

}  // namespace packtune::cli
