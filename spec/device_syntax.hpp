#pragma once
// The syntax of a device string, apart from device.hpp's LibTorch code: the config parser
// checks it without linking the training engine.
#include <string>

namespace packtune::spec {

// Checks the syntax of a device string: cpu, cuda, cuda:N or auto. Throws InputError.
void check_device_syntax(const std::string& device);

}  // namespace packtune::spec
