#include "spec/optimizer_table.hpp"

#include <sstream>

#include "packtune/error.hpp"

namespace packtune::spec {
namespace {

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

}  // namespace

const std::vector<OptimizerRow>& optimizer_rows() {
  static const std::vector<OptimizerRow> rows = {
#define OPTIMIZER(kind, name, slots, decay, adaptive, doc) \
  {OptimizerKind::kind, name, words(slots), WeightDecay::decay, adaptive, doc},
#include "spec/optimizers.def"
  };
  return rows;
}

const OptimizerRow& optimizer_row(OptimizerKind kind) { return optimizer_rows().at(static_cast<std::size_t>(kind)); }

const OptimizerRow& optimizer_row(const std::string& name, const std::string& at) {
  for (const auto& row : optimizer_rows()) {
    if (row.name == name) return row;
  }
  std::string known;
  for (const auto& row : optimizer_rows()) known += (known.empty() ? "" : ", ") + row.name;
  throw InputError(at + ": unknown optimizer \"" + name + "\"; expected one of " + known);
}

const std::vector<std::string>& optimizer_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const auto& row : optimizer_rows()) all.push_back(row.name);
    return all;
  }();
  return names;
}

int kept_slots(const OptimizerRow& row, double momentum) {
  int kept = 0;
  for (const auto& slot : row.slots) kept += slot != "momentum_buffer" || momentum > 0;
  return kept;
}

const std::vector<OptimizerKeyRow>& optimizer_keys() {
  static const std::vector<OptimizerKeyRow> rows = {
#define OPTIMIZER_KEY(field, type, default_value, low, high, perturbable, doc) \
  {#field, #type, static_cast<double>(default_value), low, high, perturbable, doc},
#include "spec/optimizers.def"
  };
  return rows;
}

}  // namespace packtune::spec
