// The segment tree behind first fit (packing/room_tree.hpp) against a scan of its leaves in
// order: the same first slot for every query, through random rooms and updates.
#include "packing/room_tree.hpp"

#include <random>
#include <vector>

#include <catch2/catch.hpp>

using namespace packtune::packing;

namespace {

// The first slot from `from` on whose own room may fit the unit: what the tree must find.
std::size_t scan(const std::vector<RoomTree::Room>& rooms, std::size_t from, int members, const UnitEstimate& unit) {
  for (std::size_t i = from; i < rooms.size(); ++i) {
    if (RoomTree::may_fit(rooms[i], members, unit)) return i;
  }
  return rooms.size();
}

RoomTree::Room room(std::int64_t slots, std::int64_t free, std::int64_t beside) {
  RoomTree::Room r;
  r.slots = slots;
  r.free = free;
  r.beside = beside;
  return r;
}

UnitEstimate unit(std::int64_t persistent, std::int64_t transient) {
  UnitEstimate e;
  e.persistent = persistent;
  e.transient = transient;
  return e;
}

}  // namespace

TEST_CASE("a room tree finds nothing before any room is set") {
  for (std::size_t n : {0, 1, 5, 8}) {
    const RoomTree tree(n);
    CHECK(tree.size() == n);
    CHECK(tree.first(0, 1, unit(0, 0)) == n);
  }
}

TEST_CASE("a room tree does not take the best figures of different actors for one actor's") {
  RoomTree tree(4);
  tree.set(0, room(4, 10, 1));   // slots, but little room beside its transient
  tree.set(1, room(0, 100, 90));  // room, but no member slot
  tree.set(2, room(1, 50, 40));
  // The root's most (4 slots, 100 free, 90 beside) would take a unit of 2 members and 60
  // bytes; no actor does.
  CHECK(tree.first(0, 2, unit(30, 30)) == 4);
  CHECK(tree.first(0, 1, unit(30, 10)) == 2);
  CHECK(tree.first(3, 1, unit(30, 10)) == 4);
  tree.set(3, room(RoomTree::kNone, RoomTree::kUnbounded, RoomTree::kUnbounded));  // no unit slot
  CHECK(tree.first(3, 1, unit(0, 0)) == 4);
  tree.set(3, room(1, RoomTree::kUnbounded, RoomTree::kUnbounded));  // no memory limit
  CHECK(tree.first(3, 1, unit(1000000, 1000000)) == 3);
}

TEST_CASE("a room tree finds the first slot that may fit, as a scan in order does") {
  std::mt19937_64 rng(11);
  auto pick = [&](std::int64_t lo, std::int64_t hi) { return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng); };
  // Figures from a small range, so that many leaves tie and many queries sit on a boundary;
  // now and then no room or no limit.
  auto figure = [&]() -> std::int64_t {
    const auto roll = pick(0, 19);
    if (roll == 0) return RoomTree::kNone;
    if (roll == 1) return RoomTree::kUnbounded;
    return pick(-5, 40);
  };
  for (int round = 0; round < 200; ++round) {
    const auto n = static_cast<std::size_t>(pick(0, 70));
    RoomTree tree(n);
    std::vector<RoomTree::Room> rooms(n);
    for (int step = 0; step < 100; ++step) {
      if (n > 0 && pick(0, 1) == 0) {
        const auto i = static_cast<std::size_t>(pick(0, static_cast<std::int64_t>(n) - 1));
        const auto free = figure();
        rooms[i] = room(pick(0, 4) == 0 ? RoomTree::kNone : pick(0, 6), free,
                        free == RoomTree::kNone || free == RoomTree::kUnbounded ? free : free - pick(0, 10));
        tree.set(i, rooms[i]);
        REQUIRE(tree.room(i).slots == rooms[i].slots);
      }
      const auto from = static_cast<std::size_t>(pick(0, static_cast<std::int64_t>(n) + 1));
      const int members = static_cast<int>(pick(1, 5));
      const auto e = unit(pick(0, 30), pick(0, 15));
      INFO("round " << round << ", step " << step << ", " << n << " slots, from " << from);
      REQUIRE(tree.first(from, members, e) == scan(rooms, from, members, e));
    }
  }
}
