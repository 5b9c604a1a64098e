// What may differ from the config file a run was started with: `packtune run`'s flags, which
// override its keys (the table's PACKTUNE_CONFIG_FLAG rows), and on --resume, the keys the
// table lets change from the config as run (its `resume` column).
#include <filesystem>
#include <set>
#include <type_traits>

#include "experiment/config_blocks.hpp"
#include "experiment/config_keys.hpp"
#include "experiment/experiment_config.hpp"
#include "packtune/error.hpp"
#include "spec/device_syntax.hpp"
#include "spec/precision.hpp"

namespace packtune {
namespace {

using nlohmann::json;
using namespace config_table;

template <class T>
void check_rule(const FlagRule& rule, const std::string& flag, const T& value) {
  if constexpr (std::is_integral_v<T>) {
    if (rule.kind == FlagRule::Kind::AtLeast && value < rule.low) throw InputError(flag + ": " + rule.message);
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (rule.kind == FlagRule::Kind::NotEmpty && value.empty()) throw InputError(flag + ": " + rule.message);
  } else {
    if (rule.kind == FlagRule::Kind::OneValue && value.size() != 1) throw InputError(flag + ": " + rule.message);
  }
}

// An override's value into its member: an enum parsed as the flag's, a device checked.
template <class Member, class Value>
void assign(Member& member, const Value& value, const std::string& flag) {
  if constexpr (std::is_enum_v<Member>) {
    member = parse_enum<Member>(value, flag);
  } else {
    member = static_cast<Member>(value);
  }
}

void apply_one(ExperimentConfig& c, std::string ExperimentConfig::*member, const std::string& value,
               const std::string& flag) {
  if (member == &ExperimentConfig::device) spec::check_device_syntax(value);
  if (member == &ExperimentConfig::precision) spec::parse_precision(value, flag);
  if (member == &ExperimentConfig::listen) check_listen_syntax(value, flag);
  if (member == &ExperimentConfig::tuner && value != c.tuner && !c.tuner_settings.empty()) c.settings_tuner = c.tuner;
  // The export's stores, as --tuner-plugin, are relative to the current folder, not the config's.
  if (member == &ExperimentConfig::export_mlflow) {
    c.*member = mlflow_store(value.empty() ? "mlruns" : value, std::filesystem::current_path(), flag);
  } else if (member == &ExperimentConfig::export_tensorboard) {
    c.*member = folder_against(value, std::filesystem::current_path());
  } else {
    c.*member = value;
  }
}

template <class Member, class Value>
void apply_one(ExperimentConfig& c, Member ExperimentConfig::*member, const Value& value, const std::string& flag) {
  assign(c.*member, value, flag);
}

// --tuner-plugin and --model-plugin are relative to the current folder, not to the config's.
void apply_one(ExperimentConfig& c, std::string ExperimentConfig::*member, const std::vector<std::string>& value,
               const std::string&) {
  c.*member = std::filesystem::absolute(value.front()).lexically_normal().string();
}

void collect_differences(const json& a, const json& b, const std::string& where, std::vector<std::string>& out) {
  if (a.is_object() && b.is_object()) {
    std::set<std::string> keys;
    for (const auto& [k, v] : a.items()) keys.insert(k);
    for (const auto& [k, v] : b.items()) keys.insert(k);
    for (const auto& k : keys) {
      const std::string path = where.empty() ? k : where + "." + k;
      if (!a.contains(k) || !b.contains(k)) {
        out.push_back(path);
      } else {
        collect_differences(a[k], b[k], path, out);
      }
    }
  } else if (a != b) {
    out.push_back(where);
  }
}

}  // namespace

void check_override_counts(const Overrides& o) {
#define PACKTUNE_CONFIG_KEY(...)
#define PACKTUNE_CONFIG_BLOCK(...)
#define PACKTUNE_CONFIG_FLAG(member, flag, CliType, rule, help) \
  if (o.member && (rule).kind == FlagRule::Kind::OneValue) check_rule(rule, "--" flag, *o.member);
#include "experiment/config_keys.def"
#undef PACKTUNE_CONFIG_KEY
#undef PACKTUNE_CONFIG_BLOCK
#undef PACKTUNE_CONFIG_FLAG
}

void apply_overrides(ExperimentConfig& c, const Overrides& o) {
#define PACKTUNE_CONFIG_KEY(...)
#define PACKTUNE_CONFIG_BLOCK(...)
#define PACKTUNE_CONFIG_FLAG(member, flag, CliType, rule, help) \
  if (o.member) {                                               \
    check_rule(rule, "--" flag, *o.member);                     \
    apply_one(c, &ExperimentConfig::member, *o.member, "--" flag); \
  }
#include "experiment/config_keys.def"
#undef PACKTUNE_CONFIG_KEY
#undef PACKTUNE_CONFIG_BLOCK
#undef PACKTUNE_CONFIG_FLAG
}

std::vector<std::string> resume_differences(const json& ran, const json& now) {
  std::set<std::string> may_change;
  for (const auto& key : config_table::keys()) {
    if (key.resume == Resume::MayChange) may_change.insert(key.name);
  }
  std::vector<std::string> all, out;
  collect_differences(ran, now, "", all);
  for (const auto& key : all) {
    // A block that may change may change in any of its keys: export.mlflow is export's.
    if (!may_change.count(key) && !may_change.count(key.substr(0, key.find('.')))) out.push_back(key);
  }
  return out;
}

}  // namespace packtune
