#include "packing/room_tree.hpp"

#include <algorithm>

namespace packtune::packing {

RoomTree::RoomTree(std::size_t slots) : size_(slots) {
  while (leaves_ < slots) leaves_ *= 2;
  room_.assign(2 * leaves_, Room{});
}

void RoomTree::set(std::size_t slot, const Room& room) {
  std::size_t node = leaves_ + slot;
  room_[node] = room;
  for (node /= 2; node >= 1; node /= 2) {
    const auto& l = room_[2 * node];
    const auto& h = room_[2 * node + 1];
    room_[node] = {std::max(l.slots, h.slots), std::max(l.free, h.free), std::max(l.beside, h.beside)};
  }
}

std::size_t RoomTree::first(std::size_t from, int members, const UnitEstimate& unit) const {
  const auto found = first(1, 0, leaves_, from, members, unit);
  return found < size_ ? found : size_;
}

std::size_t RoomTree::first(std::size_t node, std::size_t lo, std::size_t hi, std::size_t from, int members,
                            const UnitEstimate& unit) const {
  if (hi <= from || !may_fit(room_[node], members, unit)) return leaves_;
  if (hi - lo == 1) return lo;
  const auto mid = (lo + hi) / 2;
  const auto left = first(2 * node, lo, mid, from, members, unit);
  return left < leaves_ ? left : first(2 * node + 1, mid, hi, from, members, unit);
}

}  // namespace packtune::packing
