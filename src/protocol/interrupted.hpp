#pragma once
// A signal (SIGTERM from scancel or a node agent, Ctrl-C) interrupts the ZeroMQ call that a
// thread happens to be in with EINTR, which cppzmq throws. Every handler of ours only sets a
// flag that the loops read, so an interrupted call is made again; thrown on from a helper
// thread it would end the process (a driver cancelled by Slurm once aborted so, before it
// wrote best.json).
#include <cerrno>

#include <zmq.hpp>

namespace packtune::protocol {

// call(), made again for as long as a signal interrupts it.
template <typename Call>
auto retry_interrupted(Call&& call) -> decltype(call()) {
  while (true) {
    try {
      return call();
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
    }
  }
}

}  // namespace packtune::protocol
