#pragma once
// A search-space parameter in the coordinates the Parzen estimator models it in: a choice's
// index, a log-uniform's logarithm, an integer's cell, and the way back to a value.
#include <cstddef>

#include "tuners/search_space.hpp"

namespace packtune::tuners {

// A parameter in the estimator's coordinates.
struct ParzenAxis {
  bool categorical = false;
  std::size_t choices = 0;  // categorical only
  double low = 0;           // numeric only: the search coordinate's range
  double high = 0;
  // Integers (randint): draws are rounded, and a kernel's density at an integer is its mass on
  // the cell [x - 0.5, x + 0.5], as Optuna's discrete truncated normal has it.
  bool discrete = false;
};

// The coordinate a ParamSpec is modelled in, and a value's place on it.
ParzenAxis parzen_axis(const ParamSpec& param);
double to_axis(const ParamSpec& param, const ParamValue& value);
ParamValue from_axis(const ParamSpec& param, double x);

}  // namespace packtune::tuners
