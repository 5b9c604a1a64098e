#pragma once
// The segment tree behind first-fit placement (Planner::plan): each leaf is one actor's free
// room, each inner node the most of every figure below it, so the first actor from a given
// slot on that may take a new unit is found in O(log actors) instead of by trying each in
// turn. "May": a node's figures can come from different actors, so the leaf it leads to is
// the first candidate; the caller still asks the actor whether the unit fits.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "packing/memory_model.hpp"

namespace packtune::packing {

class RoomTree {
 public:
  static constexpr std::int64_t kUnbounded = std::numeric_limits<std::int64_t>::max() / 4;
  static constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::min() / 4;
  // An actor's room, or the most of any below a node. It fits a new unit of k members,
  // persistent p and transient t iff slots >= k, beside >= p and free >= p + t
  // (base + persistent + p + max(largest transient, t) <= usable, rearranged). kNone: no
  // room (an actor not yet filed); kUnbounded: no memory limit.
  struct Room {
    std::int64_t slots = kNone;   // member slots left for a new unit
    std::int64_t free = kNone;    // usable - base - persistent
    std::int64_t beside = kNone;  // free - the largest transient
  };

  // `slots` leaves, every one without room.
  explicit RoomTree(std::size_t slots);

  std::size_t size() const { return size_; }
  void set(std::size_t slot, const Room& room);
  const Room& room(std::size_t slot) const { return room_[leaves_ + slot]; }

  static bool may_fit(const Room& r, int members, const UnitEstimate& unit) {
    return r.slots >= members && r.beside >= unit.persistent && r.free >= unit.peak();
  }
  // The first slot from `from` on whose room may fit a new unit of `members` members and
  // these figures, or size() if none.
  std::size_t first(std::size_t from, int members, const UnitEstimate& unit) const;

 private:
  std::size_t first(std::size_t node, std::size_t lo, std::size_t hi, std::size_t from, int members,
                    const UnitEstimate& unit) const;

  std::size_t size_ = 0;
  std::size_t leaves_ = 1;  // a power of two, at least size_
  std::vector<Room> room_;  // 1-based heap order: node n's children are 2n and 2n + 1
};

}  // namespace packtune::packing
