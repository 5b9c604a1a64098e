#pragma once
// For tests of sockets and threads: a result that arrives when it arrives. The 10 s are a
// deadline for a failure, never a window a passing run depends on: a quiet machine and one
// beside a busy loop both get there, only sooner or later.
#include <chrono>

namespace packtune::testing {

// Calls `attempt` until it returns something that converts to true (a message, a count), and
// returns that; the last, empty, result after 10 s.
template <class Attempt>
auto eventually(Attempt attempt) -> decltype(attempt()) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (true) {
    auto got = attempt();
    if (got || std::chrono::steady_clock::now() >= deadline) return got;
  }
}

}  // namespace packtune::testing
