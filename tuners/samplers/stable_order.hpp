#pragma once
// The permutation that sorts a vector of doubles ascending, equal values in index order (numpy's
// stable argsort), in linear time for values spread over their range: the Parzen estimator
// orders a thousand or so kernel means per parameter at every suggestion.
#include <cstdint>
#include <vector>

namespace packtune::tuners {

std::vector<std::uint32_t> stable_order(const std::vector<double>& v);

}  // namespace packtune::tuners
