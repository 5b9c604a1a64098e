#include "tuners/samplers/parzen_axis.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "packtune/error.hpp"

namespace packtune::tuners {

ParzenAxis parzen_axis(const ParamSpec& param) {
  ParzenAxis axis;
  switch (param.kind) {
    case ParamSpec::Kind::Choice:
      axis.categorical = true;
      axis.choices = param.values.size();
      break;
    case ParamSpec::Kind::Uniform:
      axis.low = param.low;
      axis.high = param.high;
      break;
    case ParamSpec::Kind::LogUniform:
      axis.low = std::log(param.low);
      axis.high = std::log(param.high);
      break;
    case ParamSpec::Kind::RandInt:
      axis.low = param.low - 0.5;
      axis.high = param.high + 0.5;
      axis.discrete = true;
      break;
  }
  return axis;
}

double to_axis(const ParamSpec& param, const ParamValue& value) {
  switch (param.kind) {
    case ParamSpec::Kind::Choice: {
      const auto it = std::find(param.values.begin(), param.values.end(), value);
      if (it == param.values.end()) {
        throw Error("tpe: " + param.name + " = " + to_string(value) + " is not one of its choices");
      }
      return static_cast<double>(it - param.values.begin());
    }
    case ParamSpec::Kind::LogUniform:
      return std::log(as_number(value, param.name));
    case ParamSpec::Kind::Uniform:
    case ParamSpec::Kind::RandInt:
      return as_number(value, param.name);
  }
  return 0;
}

ParamValue from_axis(const ParamSpec& param, double x) {
  switch (param.kind) {
    case ParamSpec::Kind::Choice:
      return param.values[static_cast<std::size_t>(x)];
    case ParamSpec::Kind::LogUniform:
      return std::clamp(std::exp(x), param.low, param.high);
    case ParamSpec::Kind::Uniform:
      return std::clamp(x, param.low, param.high);
    case ParamSpec::Kind::RandInt:
      return std::clamp(static_cast<std::int64_t>(std::llround(x)), static_cast<std::int64_t>(param.low),
                        static_cast<std::int64_t>(param.high));
  }
  return ParamValue{};
}

}  // namespace packtune::tuners
