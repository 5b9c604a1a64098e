#pragma once
// A deterministic stop for fault tests: with PACKTUNE_TEST_HOLD=POINT:FILE in its environment, a
// process that reaches test_hold("POINT") creates FILE (exclusively), writes its pid into it
// and sleeps until it is killed. A test waits for FILE, then does what it must at exactly that
// point (kill the driver, delete a folder) without guessing at timings. When FILE exists
// already the process goes on: a restarted or resumed process passes the point it held at.
// Without the variable, or at another point, it costs a string compare (the variable is read
// once), so it may sit in a busy loop.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace packtune {

inline void test_hold(const char* point) {
  static const char* const hold = std::getenv("PACKTUNE_TEST_HOLD");
  if (!hold) return;
  const char* colon = std::strchr(hold, ':');
  if (!colon || std::string(hold, colon) != point) return;
  const int fd = ::open(colon + 1, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return;
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::write(fd, pid.data(), pid.size()) < 0) {
  }
  ::close(fd);
  while (true) ::pause();
}

}  // namespace packtune
