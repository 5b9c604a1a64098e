#include "tuners/search_space.hpp"

#include <algorithm>
#include <cmath>

#include "packtune/error.hpp"

namespace packtune::tuners {
namespace {

double number_field(const nlohmann::json& obj, const char* key, const std::string& where) {
  if (!obj.contains(key)) throw InputError(where + "." + key + ": missing; expected a number");
  const auto& v = obj.at(key);
  if (!v.is_number()) {
    throw InputError(where + "." + key + ": expected a number, got " + std::string(v.type_name()));
  }
  double d = v.get<double>();
  if (!std::isfinite(d)) throw InputError(where + "." + key + ": expected a finite number");
  return d;
}

void reject_unknown_keys(const nlohmann::json& obj, const std::vector<std::string>& allowed,
                         const std::string& where) {
  for (const auto& [key, _] : obj.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw InputError(where + "." + key + ": unknown key; expected one of " + list);
    }
  }
}

}  // namespace

double unit_draw(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

SearchSpace SearchSpace::from_json(const nlohmann::json& space, const std::string& where) {
  if (!space.is_object()) {
    throw InputError(where + ": expected an object of parameter distributions, got " +
                     std::string(space.type_name()));
  }
  SearchSpace out;
  for (const auto& [name, spec] : space.items()) {
    const std::string at = where + "." + name;
    if (!spec.is_object()) {
      throw InputError(at + ": expected an object like {\"type\": \"uniform\", \"low\": 0, "
                            "\"high\": 1}, got " + std::string(spec.type_name()));
    }
    if (!spec.contains("type") || !spec.at("type").is_string()) {
      throw InputError(at + ".type: missing; expected one of uniform, loguniform, randint, choice");
    }
    const auto type = spec.at("type").get<std::string>();
    ParamSpec p;
    p.name = name;
    if (type == "choice") {
      reject_unknown_keys(spec, {"type", "values"}, at);
      if (!spec.contains("values") || !spec.at("values").is_array() || spec.at("values").empty()) {
        throw InputError(at + ".values: expected a non-empty list of choices");
      }
      p.kind = ParamSpec::Kind::Choice;
      int i = 0;
      for (const auto& v : spec.at("values")) {
        p.values.push_back(param_from_json(v, at + ".values[" + std::to_string(i++) + "]"));
      }
    } else if (type == "uniform" || type == "loguniform" || type == "randint") {
      reject_unknown_keys(spec, {"type", "low", "high"}, at);
      p.low = number_field(spec, "low", at);
      p.high = number_field(spec, "high", at);
      if (type == "uniform") {
        p.kind = ParamSpec::Kind::Uniform;
        if (!(p.low < p.high)) throw InputError(at + ": empty range; expected low < high");
      } else if (type == "loguniform") {
        p.kind = ParamSpec::Kind::LogUniform;
        if (p.low <= 0) throw InputError(at + ".low: expected a positive number for loguniform");
        if (!(p.low < p.high)) throw InputError(at + ": empty range; expected low < high");
      } else {
        p.kind = ParamSpec::Kind::RandInt;
        if (!spec.at("low").is_number_integer() || !spec.at("high").is_number_integer()) {
          throw InputError(at + ": expected integer low and high for randint");
        }
        if (p.low > p.high) throw InputError(at + ": empty range; expected low <= high");
      }
    } else {
      throw InputError(at + ".type: unknown distribution \"" + type +
                       "\"; expected one of uniform, loguniform, randint, choice");
    }
    out.add(std::move(p));
  }
  return out;
}

void SearchSpace::add(ParamSpec spec) {
  auto pos = std::lower_bound(params_.begin(), params_.end(), spec.name,
                              [](const ParamSpec& a, const std::string& n) { return a.name < n; });
  if (pos != params_.end() && pos->name == spec.name) {
    throw InputError("space." + spec.name + ": defined twice");
  }
  params_.insert(pos, std::move(spec));
}

TrialConfig SearchSpace::sample(std::mt19937_64& rng) const {
  TrialConfig config;
  for (const auto& p : params_) {
    const double u = unit_draw(rng);
    switch (p.kind) {
      case ParamSpec::Kind::Uniform:
        config[p.name] = p.low + u * (p.high - p.low);
        break;
      case ParamSpec::Kind::LogUniform:
        config[p.name] = std::exp(std::log(p.low) + u * (std::log(p.high) - std::log(p.low)));
        break;
      case ParamSpec::Kind::RandInt: {
        const auto lo = static_cast<std::int64_t>(p.low);
        const auto span = static_cast<std::int64_t>(p.high) - lo + 1;
        config[p.name] = lo + std::min<std::int64_t>(static_cast<std::int64_t>(u * span), span - 1);
        break;
      }
      case ParamSpec::Kind::Choice: {
        const auto n = p.values.size();
        config[p.name] = p.values[std::min<std::size_t>(static_cast<std::size_t>(u * n), n - 1)];
        break;
      }
    }
  }
  return config;
}

std::vector<TrialConfig> SearchSpace::grid(int points_per_axis) const {
  if (points_per_axis < 1) throw InputError("grid: points per axis must be at least 1");
  std::vector<std::vector<ParamValue>> axes;
  for (const auto& p : params_) {
    std::vector<ParamValue> axis;
    switch (p.kind) {
      case ParamSpec::Kind::Choice:
        axis = p.values;
        break;
      case ParamSpec::Kind::RandInt:
        for (auto v = static_cast<std::int64_t>(p.low); v <= static_cast<std::int64_t>(p.high); ++v) {
          axis.emplace_back(v);
        }
        break;
      case ParamSpec::Kind::Uniform:
      case ParamSpec::Kind::LogUniform: {
        const bool log = p.kind == ParamSpec::Kind::LogUniform;
        const double lo = log ? std::log(p.low) : p.low;
        const double hi = log ? std::log(p.high) : p.high;
        for (int i = 0; i < points_per_axis; ++i) {
          const double t = points_per_axis == 1 ? 0.5 : static_cast<double>(i) / (points_per_axis - 1);
          const double x = lo + t * (hi - lo);
          axis.emplace_back(log ? std::exp(x) : x);
        }
        break;
      }
    }
    axes.push_back(std::move(axis));
  }
  std::vector<TrialConfig> out{TrialConfig{}};
  for (std::size_t a = 0; a < axes.size(); ++a) {
    std::vector<TrialConfig> next;
    next.reserve(out.size() * axes[a].size());
    for (const auto& partial : out) {
      for (const auto& v : axes[a]) {
        auto c = partial;
        c[params_[a].name] = v;
        next.push_back(std::move(c));
      }
    }
    out = std::move(next);
  }
  return out;
}

}  // namespace packtune::tuners
