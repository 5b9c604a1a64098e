#include "driver/profile_gate.hpp"

#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

#include "datasets/data_fingerprint.hpp"
#include "packtune/error.hpp"
#include "util/printable.hpp"

namespace packtune {

ProfileGate::ProfileGate(packing::Planner& planner, packing::Plan& plan, const ActorRegistry& registry,
                         Options options)
    : planner_(planner), plan_(plan), registry_(registry), options_(options) {
  if (!options_.enabled || options_.cache_dir.empty()) return;
  cache_ = std::make_unique<ProfileCache>(options_.cache_dir);
  // Read at the first job, not here: the driver's log file is open by then, and a warning
  // about the file belongs in it.
  cache_read_ = options_.fresh;
}

namespace {

// A TorchScript file's contents as a cache key: its size and the SHA-256 of its sampled bytes
// (datasets::fingerprint_file; a .pt file is a zip whose directory at its end, always sampled,
// lists every entry's CRC), not its modification time, which a copy changes. A file saved again
// under the same name (another model) must not take the old one's profile. "" where the file
// cannot be read: the actors will say why, and the path alone keys it.
std::string file_fingerprint(const std::string& path) {
  try {
    const auto f = datasets::fingerprint_file(path);
    return fmt::format("{} bytes, sampled sha256 {}", f.size, f.sample_sha256.substr(0, 16));
  } catch (const Error&) {
    return "";
  }
}

}  // namespace

const std::string& ProfileGate::cache_key(const std::string& shape_key) const {
  const auto found = cache_keys_.find(shape_key);
  return found == cache_keys_.end() ? shape_key : found->second;
}

ProfileCache::Context ProfileGate::context_of(const ActorState& actor) {
  return {actor.device_model, actor.build, actor.data_context};
}

void ProfileGate::take_from_cache(const packing::TrialShape& shape) {
  if (!cache_) return;
  if (!std::exchange(cache_read_, true)) {
    if (const auto why = cache_->open(); !why.empty()) {
      spdlog::warn("the throughput profile cache cannot be read ({}); profiles are measured again and the file "
                   "replaced", why);
    }
  }
  if (cache_->entries().empty()) return;
  // Looked up again only once actors came or went, not for every job of the shape: a driver of
  // thousands of actors admits thousands of jobs.
  auto& checked = cache_checked_[shape.key];
  if (checked == plan_.actors.size()) return;
  checked = plan_.actors.size();
  const auto& model = planner_.throughput_model();
  for (const auto& a : plan_.actors) {
    const ActorState* actor = registry_.actor_by_id(a.actor.id);
    if (!actor || !actor->ready || actor->dead || actor->device_model.empty()) continue;
    if (model.profiled(actor->device, shape.key)) continue;
    const auto entry = cache_->find(context_of(*actor), cache_key(shape.key), options_.max_pack);
    if (!entry) continue;
    planner_.record_profile(actor->device, shape, entry->points);
    for (auto& p : plan_.actors) planner_.refresh(p);
    ++from_cache_;
    spdlog::info("shape {} on {}: throughput profile from the cache (measured {}), no profile measured; units of "
                 "up to {} pay", shape.key, util::printable(actor->device_model, 160), entry->measured,
                 planner_.useful_members(shape, actor->device));
  }
}

void ProfileGate::prepare(const packing::TrialShape& shape, const spec::TrialSpec& spec) {
  if (!options_.enabled) return;
  if (cache_ && spec::torchscript_family(spec.model) && !cache_keys_.count(shape.key)) {
    const auto fingerprint = file_fingerprint(spec::torchscript_path(spec.model));
    cache_keys_[shape.key] = fingerprint.empty() ? shape.key : shape.key + " (" + fingerprint + ")";
  }
  take_from_cache(shape);
}

std::optional<protocol::Profile> ProfileGate::placed(int actor_id, const packing::TrialShape& shape,
                                                     const tuners::TrialConfig& full, const spec::TrialSpec& spec,
                                                     Clock::time_point now) {
  if (!options_.enabled) return std::nullopt;
  const auto& key = shape.key;
  // A shape of an architecture already covered is profiled too, for its own figures.
  if (requests_.count(key) || failed_.count(key) || planner_.throughput_model().profiled("", key)) return std::nullopt;
  // A narrower shape of its family being profiled may rule this one out: it is asked for (at a
  // later job) once that answer is in.
  if (narrower_asked(shape)) return std::nullopt;
  const ActorState* actor = registry_.actor_by_id(actor_id);
  if (!actor || !actor->ready || actor->dead) return std::nullopt;
  // ruled_out() looks at every actor: it is asked again only once actors came or went (one of a
  // new device kind may need the profile), not for every job of the shape.
  auto skipped = skipped_.find(key);
  if (skipped != skipped_.end() && skipped->second == plan_.actors.size()) return std::nullopt;
  if (ruled_out(shape)) {
    skipped_[key] = plan_.actors.size();
    return std::nullopt;
  }
  skipped_.erase(key);
  const int members = members_with_room(actor_id, shape);
  if (members == 0) return std::nullopt;
  requests_[key] = {actor_id, now, shape, members};
  spdlog::debug("actor {} profiles the throughput of shape {} while it trains it, up to {} member(s)", actor_id, key,
                members);
  return protocol::Profile{key, full, members, spec};
}

int ProfileGate::members_with_room(int actor_id, const packing::TrialShape& shape) const {
  const auto planned = std::find_if(plan_.actors.begin(), plan_.actors.end(),
                                    [&](const packing::ActorPlan& a) { return a.actor.id == actor_id; });
  if (planned == plan_.actors.end() || planned->actor.capacity_bytes <= 0) return options_.max_pack;
  const double room =
      static_cast<double>(planner_.usable(planned->actor)) - static_cast<double>(planned->estimated_bytes);
  const auto& model = planner_.memory_model();
  if (static_cast<double>(model.estimate(shape, 1).peak()) > room) return 0;
  int members = 1;
  while (members * 2 <= options_.max_pack &&
         static_cast<double>(model.estimate(shape, members * 2).peak() + model.estimate(shape, members).peak()) <= room) {
    members *= 2;
  }
  return members;
}

bool ProfileGate::narrower_asked(const packing::TrialShape& shape) const {
  if (shape.fusion.empty()) return false;
  return std::any_of(requests_.begin(), requests_.end(), [&](const auto& r) {
    return r.first != shape.key && r.second.shape.fusion == shape.fusion &&
           r.second.shape.flops_per_sample <= shape.flops_per_sample;
  });
}

bool ProfileGate::ruled_out(const packing::TrialShape& shape) const {
  bool any = false;
  for (const auto& a : plan_.actors) {
    const ActorState* actor = registry_.actor_by_id(a.actor.id);
    if (!actor || !actor->ready || actor->dead) continue;
    if (!planner_.throughput_model().fusion_ruled_out(a.actor.device, shape, planner_.options().min_gain)) return false;
    any = true;
  }
  return any;
}

void ProfileGate::on_profiled(int actor, const protocol::Profiled& m) {
  auto request = requests_.find(m.key);
  if (request == requests_.end()) return;
  packing::StepProfile points;
  std::string table;
  for (std::size_t i = 0; i < m.members.size() && i < m.seconds.size(); ++i) {
    points.emplace_back(m.members[i], m.seconds[i]);
    table += fmt::format("{}{}: {:.2f} ms", table.empty() ? "" : ", ", m.members[i], m.seconds[i] * 1e3);
  }
  if (!m.error.empty() || points.empty()) {
    // Asked again, the same actor would fail the same way (out of memory, mostly) for ever.
    failed_.insert(m.key);
    spdlog::warn("actor {} could not profile shape {}: {}; its units are sized by the prior", actor, m.key,
                 m.error.empty() ? "no step time" : m.error);
  } else {
    planner_.record_profile(m.device, request->second.shape, points);
    for (auto& a : plan_.actors) planner_.refresh(a);
    ++measured_;
    const ActorState* measured_by = registry_.actor_by_id(actor);
    if (cache_ && measured_by) {
      // What the profile was allowed to time: where it ended on memory, no more than it reached,
      // so that a run with more room measures again instead of taking it as where gains end.
      const int allowed = m.cut_short ? points.back().first : request->second.max_members;
      const auto why = cache_->store(
          {context_of(*measured_by), cache_key(m.key), points, allowed, ProfileCache::now_utc()});
      if (!why.empty() && !std::exchange(cache_warned_, true)) {
        spdlog::warn("throughput profiles are not kept for later runs: {}", why);
      }
    }
    spdlog::debug("actor {} profiled shape {} on {}: step time by unit size {}; units of up to {} pay", actor, m.key,
                 m.device, table, planner_.useful_members(request->second.shape, m.device));
  }
  requests_.erase(request);
}

void ProfileGate::expire(Clock::time_point now) {
  const auto timeout = std::chrono::duration<double>(options_.timeout_seconds);
  for (auto it = requests_.begin(); it != requests_.end();) {
    const ActorState* actor = registry_.actor_by_id(it->second.actor);
    if (actor && !actor->dead && now - it->second.asked < timeout) {
      ++it;
      continue;
    }
    if (actor && !actor->dead) {
      // Timed out on a live actor: asked again, it would hang as long once more. An actor that
      // died leaves the shape to the next one.
      failed_.insert(it->first);
      spdlog::warn("no throughput profile of shape {} came back; its units are sized by the prior", it->first);
    }
    it = requests_.erase(it);
  }
}

}  // namespace packtune
