#pragma once
// The driver's throughput-profile gate (docs/planner.md). With fuse "auto" the planner sizes
// fused units from the step times actors measure. No job waits for a profile: the first job of
// a shape no profile speaks for is placed by what the planner has (the prior, or a profile of
// another width of its architecture, scaled), and the actor it goes to is asked to profile the
// shape while it trains, timing its own unit's rounds in place of a model of that size
// (actors/throughput_profile.hpp), up to the largest unit its memory has room for beside its
// pack. The answer sizes the units that come after. A shape is not
// asked for where a profile of a narrower one of its family (no more work per sample) on every
// live actor's device kind found that two fused members do not pay: then neither would they;
// nor while such a narrower profile is out, since its answer may rule this one out.
// This decides which shapes to ask for and files the answers in the planner. No sockets: the
// driver sends the requests it is handed. Times are passed in, so tests need no clock.
//
// With a profile cache (driver/profile_cache.hpp), a shape is first looked up there under each
// live actor's context; a profile found is filed as if that actor had just measured it, and
// every profile an actor measures is kept there for later runs.
#include <chrono>
#include <memory>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "driver/actor_registry.hpp"
#include "driver/profile_cache.hpp"
#include "packing/planner.hpp"
#include "protocol/protocol.hpp"
#include "tuners/tuner.hpp"

namespace packtune {

class ProfileGate {
 public:
  using Clock = std::chrono::steady_clock;

  struct Options {
    // With one trial per actor every unit is a plain model, and with fuse other than "auto"
    // no profile sizes a unit: then nothing waits and nothing is asked.
    bool enabled = true;
    int max_pack = 1;              // the largest unit an actor profiles
    double timeout_seconds = 120;  // a request older than this is given up
    std::string cache_dir;         // the profile cache's folder; empty: no cache
    bool fresh = false;            // keep measured profiles in the cache, but take none from it
  };

  // The planner is where answers go, the plan's actors are those whose device kinds decide
  // whether a shape is ruled out, the registry says which of them are ready and alive.
  ProfileGate(packing::Planner& planner, packing::Plan& plan, const ActorRegistry& registry, Options options);

  // A job of a trial of `shape` is about to be placed: the planner gets the cache's profiles of
  // the shape (for the live actors' contexts) first.
  void prepare(const packing::TrialShape& shape, const spec::TrialSpec& spec);
  // A job of a trial of `shape` (its full config `full`, parsed as `spec`) went to `actor`: the
  // Profile the caller must send it after the job, where the shape needs one. prepare() came
  // first, before the job was placed.
  std::optional<protocol::Profile> placed(int actor, const packing::TrialShape& shape, const tuners::TrialConfig& full,
                                          const spec::TrialSpec& spec, Clock::time_point now);

  // An actor's answer: recorded in the planner (an error or no step time leaves the shape to
  // the prior).
  void on_profiled(int actor, const protocol::Profiled& answer);
  // A profile that never comes (its actor died or hangs) is given up: a dead actor's request
  // goes at once, and the shape is asked of the next actor it goes to; one older than the
  // timeout on a live actor is not asked again.
  void expire(Clock::time_point now);

  bool asked(const std::string& key) const { return requests_.count(key) > 0; }
  // Profiles this run measured, and those it took from the cache.
  int measured() const { return measured_; }
  int from_cache() const { return from_cache_; }
  // The cache's file, or "" without one.
  std::string cache_file() const { return cache_ ? cache_->file() : std::string(); }

 private:
  // Files the cache's profiles of `shape` for the device kinds of live actors that have none.
  void take_from_cache(const packing::TrialShape& shape);
  // The key under which the cache keeps `shape`'s profile.
  const std::string& cache_key(const std::string& shape_key) const;
  static ProfileCache::Context context_of(const ActorState& actor);
  // Whether the profiles on every live actor's device kind rule out fusing `shape`.
  bool ruled_out(const packing::TrialShape& shape) const;
  // Whether a profile of another shape of `shape`'s family, with no more work per sample, is
  // asked for and unanswered.
  bool narrower_asked(const packing::TrialShape& shape) const;

  struct Request {
    int actor = -1;
    Clock::time_point asked;
    packing::TrialShape shape;
    int max_members = 1;  // the largest unit it may time
  };
  // The largest unit of `shape` (a power of two, up to max_pack) the actor may time beside its
  // pack as the plan has it: a unit of K and the K before it, kept together on a GPU, fit in
  // the room its memory model leaves. 0: not even one member fits; a later job's actor is asked.
  int members_with_room(int actor, const packing::TrialShape& shape) const;

  packing::Planner& planner_;
  packing::Plan& plan_;
  const ActorRegistry& registry_;
  Options options_;
  std::map<std::string, Request> requests_;  // by shape key, while unanswered
  // Shape keys a narrower profile ruled out, with the number of actors the plan had then.
  std::map<std::string, std::size_t> skipped_;
  // Shape keys whose profile came back with an error: left to the prior, not asked again.
  std::set<std::string> failed_;
  std::unique_ptr<ProfileCache> cache_;
  // Shape key: the key its profile has in the cache, where that differs (a TorchScript shape's
  // key names its file; the cache's names what the file holds).
  std::map<std::string, std::string> cache_keys_;
  std::map<std::string, std::size_t> cache_checked_;  // shape key: the plan's actors when last looked up
  bool cache_read_ = false;                          // the file was read (at the first job)
  bool cache_warned_ = false;                        // about a file that could not be written
  int measured_ = 0;
  int from_cache_ = 0;
};

}  // namespace packtune
