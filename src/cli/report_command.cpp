#include "cli/report_command.hpp"

#include <iostream>

#include <boost/program_options.hpp>

#include "cli/command_line.hpp"
#include "experiment/report_page.hpp"
#include "packtune/error.hpp"

namespace packtune::cli {

namespace po = boost::program_options;

int run_report_command(const std::vector<std::string>& args) {
  po::options_description options("packtune report DIR [--output FILE]");
  options.add_options()("help,h", "show this help")("dir", po::value<std::string>(), "an experiment's --out")(
      "output,o", po::value<std::string>(), "write the page to FILE instead of DIR/report.html");
  po::positional_options_description positional;
  positional.add("dir", 1);
  auto vm = parse_command_line("report", args, options, positional);
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  if (!vm.count("dir")) throw InputError("report: missing DIR, the --out of a packtune run");
  const auto written = report::write_report(vm["dir"].as<std::string>(),
                                            vm.count("output") ? vm["output"].as<std::string>() : std::string());
  std::cout << written << "\n";
  return 0;
}

}  // namespace packtune::cli
