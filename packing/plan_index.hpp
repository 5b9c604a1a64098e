#pragma once
// What the planner looks up without scanning a plan's actors: where each placed trial is, the
// actors with a free member slot ordered by estimated work (per device kind), and the actors
// holding a fused unit that one more trial of a fusion key could join. It lives inside the
// Plan it describes, so that placing, removing and finding one trial (the driver does each
// once per job) cost O(log actors), not O(actors), at 10,000 actors and 100,000 trials.
//
// The planner keeps it current through its own changes. A plan changed outside the planner
// (the driver re-reads its actors' capacities, the memory model is corrected) goes through
// Planner::refresh, which marks every index stale; the next planner call rebuilds it in
// O(actors log actors), which those changes cost anyway.
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace packtune::packing {

class PlanIndex {
 public:
  using Load = std::pair<double, std::size_t>;  // estimated seconds, actor slot in Plan::actors
  // A fused unit's padded figures (parameters, largest parameter, activations and FLOPs per
  // sample, optimizer slots, weight decay, adaptive): a trial no larger in any of them leaves
  // the unit's shape, and so its useful size, as it is.
  using Bound = std::tuple<std::int64_t, std::int64_t, std::int64_t, std::int64_t, int, bool, bool>;

  // One actor as the index files it.
  struct Filing {
    // A fused unit another member may join (only on an open actor). Units of one group
    // (device kind, padded shape, size) cost alike per member, so a trial that leaves their
    // shape as it is finishes at about `order` + its steps x `per_member` on any of them.
    struct Unit {
      std::string key;  // fusion key
      std::string group;
      bool full = false;  // at the useful size of its own shape
      Bound bound;
      double per_member = 0;  // seconds per step of each member once one more joins
      double order = 0;       // the actor's seconds less what the members already save by joining
      double scale = 0;       // the magnitude of the terms in `order`, for rounding
      std::int64_t id = -1;
      int members = 0;
      double steps = 0;             // the members' steps
      double per_member_now = 0;    // seconds per step of each member as it is
    };
    double seconds = 0;
    bool open = false;  // takes a new unit: a free member slot and fewer units than max_units
    // The trials it could start now: 0 unless Planner::takes_more, else its free member slots
    // as far as its unit slots allow (at least one, for a unit it could join).
    int free = 0;
    std::string kind;   // device kind: actors of one kind price a new unit alike
    std::vector<Unit> units;
  };

  // Open actors with a fused unit of one key that a trial might join, in ascending order of
  // a lower bound on the trial's estimated finish there (see Filing::Unit); the same actor
  // may come more than once.
  class Joins {
   public:
    bool done() const { return heads_.empty(); }
    double bound() const { return heads_.front().bound; }
    std::size_t slot() const { return heads_.front().at->slot; }
    void next();

   private:
    friend class PlanIndex;
    struct Entry {
      double order;
      std::size_t slot;
      std::int64_t unit;
      double scale;
      bool operator<(const Entry& o) const {
        return order < o.order || (order == o.order && (slot < o.slot || (slot == o.slot && unit < o.unit)));
      }
    };
    struct Head {
      double bound;
      std::set<Entry>::const_iterator at, end;
      double per_member;  // NaN: a group the trial widens, taken in any order before the rest
      bool operator>(const Head& o) const { return bound > o.bound; }
    };
    void push(Head head);
    double steps_ = 0;
    std::vector<Head> heads_;  // a min-heap on bound
  };

  // Every index goes stale: some plan changed where its planner did not see it.
  static void invalidate_all();
  // Built for `actors` actors and nothing invalidated since.
  bool tracks(std::size_t actors) const;
  // Empty and current for `actors` actors, none of them filed yet.
  void reset(std::size_t actors);

  void file(std::size_t slot, Filing filing);
  void place(std::int64_t trial, std::size_t slot) { slot_of_[trial] = slot; }
  void forget(std::int64_t trial) { slot_of_.erase(trial); }
  const std::size_t* slot_of(std::int64_t trial) const;
  // How the actor was filed last (nullptr: not yet).
  const Filing* filed(std::size_t slot) const { return slot < filings_.size() ? &filings_[slot] : nullptr; }

  // The filings' `free`, summed: the driver asks it before every job it draws.
  std::int64_t free_slots() const { return free_slots_; }
  // Actors that take a new unit, by estimated seconds, per device kind.
  const std::map<std::string, std::set<Load>>& open() const { return open_; }
  // Open actors (ascending slots) with a fused unit of `key` that a trial of figures `item`
  // might join: every one below its useful size, and full ones the trial would widen.
  std::vector<std::size_t> fusable(const std::string& key, const Bound& item) const;
  // The same actors for one trial of `steps` steps, by a lower bound on its finish.
  Joins joins(const std::string& key, const Bound& item, double steps) const;

  std::uint64_t planner = 0;  // the planner that filed it (fullness, rooms follow its options)
  // For Planner::why_unplaced, which asks it of every trial that finds no room.
  bool any_member_slot = false;
  std::int64_t largest_room = 0;  // the most bytes any actor has for trials

 private:
  struct Group {
    bool full = false;
    Bound bound;
    double per_member = 0;
    std::set<Joins::Entry> entries;
  };
  using Fusable = std::map<std::string, Group>;  // by Filing::Unit::group
  void unfile(std::size_t slot);

  std::uint64_t generation_ = 0;
  std::size_t size_ = static_cast<std::size_t>(-1);
  std::int64_t free_slots_ = 0;
  std::vector<Filing> filings_;
  std::map<std::string, std::set<Load>> open_;
  std::unordered_map<std::string, Fusable> fusable_;
  std::unordered_map<std::int64_t, std::size_t> slot_of_;
};

}  // namespace packtune::packing
