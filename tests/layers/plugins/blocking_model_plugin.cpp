// A model plugin whose loading never ends: a static constructor that blocks (waiting for a
// lock, a device, a network that never answers), before the loader sees any of its symbols.
// Describing it must time out, naming it, and kill what loaded it. Needs no LibTorch.
#include <unistd.h>

namespace {

struct BlocksForever {
  BlocksForever() {
    for (;;) pause();
  }
};

const BlocksForever blocks;

}  // namespace
