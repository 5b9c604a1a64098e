#include "cli/option_values.hpp"

#include <charconv>
#include <cmath>

#include "packtune/error.hpp"

namespace packtune::cli {

namespace po = boost::program_options;

std::optional<std::string> option_text(const po::variables_map& vm, const char* name) {
  if (!vm.count(name)) return std::nullopt;
  return vm[name].as<std::string>();
}

std::optional<double> option_number(const po::variables_map& vm, const char* name) {
  const auto t = option_text(vm, name);
  if (!t) return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(t->data(), t->data() + t->size(), v);
  if (ec != std::errc() || end != t->data() + t->size() || !std::isfinite(v)) {
    throw InputError(std::string("--") + name + ": expected a number, got \"" + *t + "\"");
  }
  return v;
}

std::optional<std::int64_t> option_integer(const po::variables_map& vm, const char* name, std::int64_t minimum) {
  const auto t = option_text(vm, name);
  if (!t) return std::nullopt;
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(t->data(), t->data() + t->size(), v);
  if (ec != std::errc() || end != t->data() + t->size() || v < minimum) {
    throw InputError(std::string("--") + name + ": expected an integer >= " +
                     std::to_string(minimum) + ", got \"" + *t + "\"");
  }
  return v;
}

// Whole budgets print as integers ("budget": 1, not 1.0), as in the paper's tables.
nlohmann::ordered_json number_json(double v) {
  if (!std::isfinite(v)) return nullptr;  // JSON has no NaN; a failed trial's metric is null
  if (v == std::floor(v) && std::abs(v) < 1e15) return static_cast<std::int64_t>(v);
  return v;
}

}  // namespace packtune::cli
