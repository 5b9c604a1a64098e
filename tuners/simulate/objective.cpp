#include "tuners/simulate/objective.hpp"

#include "packtune/error.hpp"
#include "tuners/simulate/synthetic_objective.hpp"
#include "tuners/simulate/table_objective.hpp"

namespace packtune::tuners {

std::string objective_choices(const std::string& more) {
  return more.empty() ? "table:FILE or synthetic" : "table:FILE, synthetic or " + more;
}

std::unique_ptr<Objective> make_objective(const std::string& spec, const TunerContext& context,
                                          const std::string& more) {
  const std::string table_prefix = "table:";
  if (spec.compare(0, table_prefix.size(), table_prefix) == 0) {
    const std::string path = spec.substr(table_prefix.size());
    if (path.empty()) throw InputError("--objective: expected table:FILE with a file name");
    return std::make_unique<TableObjective>(TableObjective::from_file(path));
  }
  if (spec == "synthetic") {
    return std::make_unique<SyntheticObjective>(context.space, context.seed, context.mode,
                                                context.max_budget);
  }
  throw InputError("--objective: unknown objective \"" + spec + "\"; expected " + objective_choices(more));
}

}  // namespace packtune::tuners
