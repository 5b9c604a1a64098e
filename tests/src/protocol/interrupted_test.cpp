#include "protocol/interrupted.hpp"

#include <catch2/catch.hpp>

using packtune::protocol::retry_interrupted;

namespace {

// What cppzmq throws when a libzmq call fails: an error_t of the call's errno.
[[noreturn]] void fail_with(int error) {
  errno = error;
  throw zmq::error_t();
}

}  // namespace

TEST_CASE("a ZeroMQ call a signal interrupts is made again, and its result returned") {
  int calls = 0;
  const int result = retry_interrupted([&] {
    if (++calls < 3) fail_with(EINTR);
    return 7;
  });
  CHECK(result == 7);
  CHECK(calls == 3);
}

TEST_CASE("any other ZeroMQ error is thrown on at once") {
  int calls = 0;
  try {
    retry_interrupted([&]() -> int {
      ++calls;
      fail_with(ETERM);
    });
    FAIL("ETERM should have been thrown");
  } catch (const zmq::error_t& e) {
    CHECK(e.num() == ETERM);
  }
  CHECK(calls == 1);
}
