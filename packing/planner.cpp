#include "packing/planner.hpp"

namespace packtune::packing {
namespace {

bool has_room(const ActorLoad& a, std::int64_t bytes) {
  if (a.members >= a.max_members) return false;
  return a.capacity_bytes <= 0 || a.used_bytes + bytes <= a.capacity_bytes;
}

}  // namespace

std::optional<int> place_trial(const std::vector<ActorLoad>& actors, std::int64_t bytes) {
  const ActorLoad* best = nullptr;
  for (const auto& a : actors) {
    if (!has_room(a, bytes)) continue;
    if (!best) {
      best = &a;
      continue;
    }
    const auto free_a = a.capacity_bytes - a.used_bytes;
    const auto free_best = best->capacity_bytes - best->used_bytes;
    if (a.members < best->members ||
        (a.members == best->members && free_a > free_best) ||
        (a.members == best->members && free_a == free_best && a.actor < best->actor)) {
      best = &a;
    }
  }
  if (!best) return std::nullopt;
  return best->actor;
}

bool fits_anywhere(const std::vector<ActorLoad>& actors, std::int64_t bytes) {
  for (const auto& a : actors) {
    if (a.max_members >= 1 && (a.capacity_bytes <= 0 || bytes <= a.capacity_bytes)) return true;
  }
  return false;
}

}  // namespace packtune::packing
