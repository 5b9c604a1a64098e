#include "spec/device_syntax.hpp"

#include <regex>

#include "packtune/error.hpp"

namespace packtune::spec {

void check_device_syntax(const std::string& device) {
  // At most 9 digits: resolve_device turns N into an int, and a longer one ("cuda:99999999999")
  // would end there in std::out_of_range instead of this one line.
  static const std::regex pattern("cpu|auto|cuda(:[0-9]{1,9})?");
  if (!std::regex_match(device, pattern)) {
    throw InputError("device: unknown device \"" + device + "\"; expected cpu, cuda, cuda:N or auto");
  }
}

}  // namespace packtune::spec
