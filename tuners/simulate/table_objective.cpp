#include "tuners/simulate/table_objective.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>

#include "packtune/error.hpp"
#include "tuners/tuner_settings.hpp"

namespace packtune::tuners {
namespace {

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

template <typename T>
bool parse_number(std::string_view text, T& out) {
  text = trim(text);
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

bool parse_metric(std::string_view text, double& out) {
  text = trim(text);
  if (text == "nan" || text == "NaN" || text == "NAN") {
    out = std::nan("");
    return true;
  }
  return parse_number(text, out) && !std::isnan(out);
}

}  // namespace

TableObjective TableObjective::from_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    throw InputError("--objective table:" + path +
                     ": cannot open the file; expected a CSV of trial,budget,metric rows");
  }
  return from_stream(in, path);
}

TableObjective TableObjective::from_stream(std::istream& in, const std::string& name) {
  TableObjective table;
  table.name_ = name;
  std::string line;
  std::int64_t line_no = 0;
  bool seen_row = false;
  const auto fail = [&](const std::string& what) {
    throw InputError("--objective table:" + name + ":" + std::to_string(line_no) + ": " + what);
  };
  while (std::getline(in, line)) {
    ++line_no;
    const auto text = trim(line);
    if (text.empty() || text.front() == '#') continue;
    std::string_view fields[3];
    std::size_t count = 0;
    std::size_t start = 0;
    while (true) {
      const auto comma = text.find(',', start);
      if (count < 3) fields[count] = text.substr(start, comma == std::string_view::npos ? comma : comma - start);
      ++count;
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (count != 3) fail("expected 3 comma-separated fields trial,budget,metric, got " + std::to_string(count));
    if (!seen_row && trim(fields[0]) == "trial" && trim(fields[1]) == "budget" &&
        trim(fields[2]) == "metric") {
      seen_row = true;
      continue;
    }
    seen_row = true;
    std::int64_t trial = 0;
    double budget = 0;
    double metric = 0;
    if (!parse_number(fields[0], trial) || trial < 0) {
      fail("trial: expected a 0-based integer index, got \"" + std::string(trim(fields[0])) + "\"");
    }
    if (!parse_number(fields[1], budget) || !std::isfinite(budget) || budget <= 0) {
      fail("budget: expected a positive number, got \"" + std::string(trim(fields[1])) + "\"");
    }
    if (!parse_metric(fields[2], metric)) {
      fail("metric: expected a number or nan, got \"" + std::string(trim(fields[2])) + "\"");
    }
    if (trial >= 100000000) fail("trial: expected an index below 100000000");
    if (static_cast<std::size_t>(trial) >= table.curves_.size()) {
      table.curves_.resize(static_cast<std::size_t>(trial) + 1);
    }
    table.curves_[static_cast<std::size_t>(trial)].emplace_back(budget, metric);
  }
  if (in.bad()) throw InputError("--objective table:" + name + ": read error");
  if (table.curves_.empty()) {
    throw InputError("--objective table:" + name + ": no rows; expected trial,budget,metric rows");
  }
  for (std::size_t t = 0; t < table.curves_.size(); ++t) {
    auto& curve = table.curves_[t];
    if (curve.empty()) {
      throw InputError("--objective table:" + name + ": trial " + std::to_string(t) +
                       " has no rows; trials must be numbered 0, 1, 2, ... without gaps");
    }
    std::stable_sort(curve.begin(), curve.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t i = 1; i < curve.size(); ++i) {
      if (curve[i].first == curve[i - 1].first) {
        throw InputError("--objective table:" + name + ": trial " + std::to_string(t) +
                         " has two rows at budget " + number_text(curve[i].first));
      }
    }
  }
  return table;
}

double TableObjective::evaluate(std::int64_t index, const TrialConfig& /*config*/, double budget) {
  if (index < 0 || index >= trials()) {
    throw InputError("--objective table:" + name_ + ": holds trials 0 to " +
                     std::to_string(trials() - 1) + ", but the tuner created trial " +
                     std::to_string(index) + "; expected --trials " + std::to_string(trials()) +
                     " or fewer");
  }
  const auto& curve = curves_[static_cast<std::size_t>(index)];
  // Budgets computed as max/eta^k may differ from the table's in the last bit.
  const double reach = budget * (1 + 1e-9);
  auto it = std::upper_bound(curve.begin(), curve.end(), reach,
                             [](double b, const auto& row) { return b < row.first; });
  if (it == curve.begin()) {
    throw InputError("--objective table:" + name_ + ": trial " + std::to_string(index) +
                     " has no row at budget " + number_text(budget) +
                     " or below; its first row is at " + number_text(curve.front().first));
  }
  return std::prev(it)->second;
}

}  // namespace packtune::tuners
