#pragma once
// The one exception hierarchy of packtune. Every message says what the user should do,
// because the CLI prints it as the single line a user sees.
#include <stdexcept>
#include <string>

namespace packtune {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input from a file, the network or the command line: the CLI exits 2.
class InputError : public Error {
 public:
  using Error::Error;
};

}  // namespace packtune
