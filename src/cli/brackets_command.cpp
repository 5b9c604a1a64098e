#include "cli/brackets_command.hpp"

#include <cmath>
#include <iostream>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "cli/option_values.hpp"
#include "util/subcommand.hpp"
#include "packtune/error.hpp"
#include "tuners/schedulers/brackets.hpp"
#include "tuners/tuner_settings.hpp"

namespace packtune::cli {

namespace po = boost::program_options;
using tuners::number_text;
// Keys print in the order the documentation shows them.
using ordered = nlohmann::ordered_json;

int run_brackets_command(const std::vector<std::string>& args) {
  util::Subcommand command("brackets", "packtune brackets --tuner hyperband --min-budget m --max-budget M --eta E [--json]");
  command.options()
      ("tuner", po::value<std::string>()->default_value("hyperband"), "hyperband (the only tuner with a fixed schedule)")
      ("min-budget", po::value<std::string>(), "smallest budget (required)")
      ("max-budget", po::value<std::string>(), "largest budget (required)")
      ("eta", po::value<std::string>()->default_value("3"), "reduction factor, an integer >= 2")
      ("json", "print {\"brackets\": [{\"s\": ..., \"rungs\": [{\"n\": ..., \"budget\": ...}]}]}");
  if (!command.parse(args)) return 0;
  const auto& vm = command.values();
  const auto tuner = *option_text(vm, "tuner");
  if (tuner != "hyperband") {
    throw InputError("--tuner: brackets prints Hyperband's fixed schedule; expected hyperband, "
                     "got \"" + tuner + "\"");
  }
  const auto min_budget = option_number(vm, "min-budget");
  const auto max_budget = option_number(vm, "max-budget");
  if (!min_budget) throw InputError("--min-budget: missing; expected the smallest budget");
  if (!max_budget) throw InputError("--max-budget: missing; expected the largest budget");
  const auto eta_value = option_number(vm, "eta");
  if (*eta_value < 2 || *eta_value != std::floor(*eta_value) || *eta_value > 1e6) {
    throw InputError("--eta: expected an integer >= 2, got " + *option_text(vm, "eta"));
  }
  const auto eta = static_cast<std::int64_t>(*eta_value);
  const auto brackets = tuners::hyperband_brackets(*min_budget, *max_budget, eta);

  if (vm.count("json")) {
    ordered out = ordered::array();
    for (const auto& b : brackets) {
      ordered rungs = ordered::array();
      for (const auto& r : b.rungs) rungs.push_back({{"n", r.n}, {"budget", number_json(r.budget)}});
      out.push_back({{"s", b.s}, {"rungs", std::move(rungs)}});
    }
    std::cout << ordered{{"brackets", std::move(out)}}.dump() << "\n";
    return 0;
  }
  const int s_max = brackets.front().s;
  const double ratio = *max_budget / *min_budget;
  std::cout << "Hyperband: min budget " << number_text(*min_budget) << ", max budget "
            << number_text(*max_budget) << ", eta " << eta << "; R = " << number_text(ratio)
            << ", s_max = " << s_max << ", B = (s_max+1)R = " << number_text((s_max + 1) * ratio)
            << " min budgets per bracket\n";
  for (const auto& b : brackets) {
    std::cout << "bracket s=" << b.s << ":";
    for (std::size_t i = 0; i < b.rungs.size(); ++i) {
      std::cout << (i ? ", " : " ") << b.rungs[i].n << " x " << number_text(b.rungs[i].budget);
    }
    std::cout << "  (configs x budget; total " << number_text(b.total_budget()) << ")\n";
  }
  return 0;
}

}  // namespace packtune::cli
