#include "driver/actor_registry.hpp"

#include <algorithm>

#include "protocol/node_route.hpp"

namespace packtune {
namespace {

using Clock = ActorRegistry::Clock;

bool silent(Clock::time_point last_heard, Clock::time_point now, double seconds) {
  return now - last_heard > std::chrono::duration<double>(seconds);
}

}  // namespace

NodeState& ActorRegistry::add_local_node(const std::string& host, int actors, Clock::time_point now) {
  NodeState& node = nodes_[0];
  node = NodeState{};
  node.id = 0;
  node.host = host;
  node.actors = actors;
  node.joined = node.last_heard = now;
  return node;
}

NodeState& ActorRegistry::add_node(const std::string& identity, const protocol::NodeHello& hello,
                                   Clock::time_point now) {
  const bool asked = hello.node_id > 0 && !nodes_.count(hello.node_id);
  const int id = asked ? hello.node_id : next_node_id_++;
  next_node_id_ = std::max(next_node_id_, id + 1);
  NodeState& node = nodes_[id];
  node.id = id;
  node.identity = identity;
  node.host = hello.host;
  node.pid = hello.pid;
  node.cores = hello.cores;
  node.memory_bytes = hello.memory_bytes;
  node.devices = hello.devices;
  node.actors = hello.actors;
  node.joined = node.last_heard = now;
  // A node declared dead that says NodeHello again is a new node under the old name: its
  // messages are the new one's.
  node_ids_[identity] = id;
  node_connections_[std::string(protocol::NodeRoute::connection(identity))] = id;
  // Its actors may have said Hello again before it did.
  for (auto& [actor_identity, actor] : actors_) {
    if (actor.node_id < 0 && actor.said_node_id == id) actor.node_id = id;
  }
  return node;
}

NodeState* ActorRegistry::node(const std::string& identity) {
  auto it = node_ids_.find(identity);
  return it == node_ids_.end() ? nullptr : node_by_id(it->second);
}

NodeState* ActorRegistry::node_on(std::string_view connection) {
  auto it = node_connections_.find(std::string(connection));
  return it == node_connections_.end() ? nullptr : node_by_id(it->second);
}

NodeState* ActorRegistry::node_by_id(int id) {
  auto it = nodes_.find(id);
  return it == nodes_.end() ? nullptr : &it->second;
}

ActorState& ActorRegistry::add_actor(const std::string& identity, const protocol::Hello& hello,
                                     Clock::time_point now) {
  auto [at, added] = actors_.try_emplace(identity);
  ActorState& actor = at->second;
  if (added) by_identity_.emplace(identity, &actor);
  if (added || actor.dead) ++live_actors_;
  if (actor.id >= 0) by_id_[static_cast<std::size_t>(actor.id)] = nullptr;
  by_token_.erase(actor.transfer_token);
  actor = ActorState{};
  actor.id = next_actor_id_++;
  by_id_.push_back(&actor);
  actor.identity = identity;
  actor.host = hello.host;
  actor.pid = hello.pid;
  // A node id no node has (a stale or forged one) links the actor to nothing.
  actor.node_id = nodes_.count(hello.node_id) ? hello.node_id : -1;
  actor.said_node_id = hello.node_id;
  actor.local_index = hello.local_index;
  actor.last_heard = now;
  return actor;
}

ActorState* ActorRegistry::actor(const std::string& identity) {
  auto it = by_identity_.find(identity);
  return it == by_identity_.end() ? nullptr : it->second;
}

ActorState* ActorRegistry::actor_by_token(const std::string& token) {
  if (token.empty()) return nullptr;
  auto it = by_token_.find(token);
  return it == by_token_.end() ? nullptr : actor(it->second);
}

void ActorRegistry::give_token(ActorState& actor, const std::string& token) {
  by_token_.erase(actor.transfer_token);
  actor.transfer_token = token;
  by_token_[token] = actor.identity;
}

const ActorState* ActorRegistry::actor_by_id(int id) const {
  return id >= 0 && id < static_cast<int>(by_id_.size()) ? by_id_[static_cast<std::size_t>(id)] : nullptr;
}

ActorState* ActorRegistry::actor_by_id(int id) {
  return const_cast<ActorState*>(static_cast<const ActorRegistry&>(*this).actor_by_id(id));
}

ActorState* ActorRegistry::actor_in_slot(int node_id, int local_index, std::int64_t pid) {
  for (auto& [identity, actor] : actors_) {
    if (!actor.dead && actor.node_id == node_id && actor.local_index == local_index && actor.pid == pid) {
      return &actor;
    }
  }
  return nullptr;
}

void ActorRegistry::mark_ready(ActorState& actor, const protocol::Ready& ready) {
  actor.ready = true;
  actor.device = ready.device;
  actor.capacity_bytes = ready.capacity_bytes;
  actor.capacity_shared = ready.capacity_shared;
  actor.base_bytes = ready.base_bytes;
  actor.device_model = ready.device_model;
  actor.build = ready.build;
  actor.data_context = ready.data_context;
  if (auto* node = node_by_id(actor.node_id)) node->settled_slots.insert(actor.local_index);
}

void ActorRegistry::mark_dead(ActorState& actor) {
  if (!actor.dead) --live_actors_;
  actor.dead = true;
  actor.ready = false;
  if (auto* node = node_by_id(actor.node_id)) node->settled_slots.insert(actor.local_index);
}

void ActorRegistry::slot_exited(int node_id, int local_index, bool final) {
  auto* node = node_by_id(node_id);
  if (!node || local_index < 0 || local_index >= node->actors) return;
  node->settled_slots.insert(local_index);
  if (final) node->ended_slots.insert(local_index);
}

std::vector<ActorState*> ActorRegistry::silent_actors(Clock::time_point now) {
  std::vector<ActorState*> out;
  const auto timeout = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeouts_.actor_seconds));
  for (auto& [identity, actor] : actors_) {
    if (actor.dead || !silent(actor.last_heard, now, timeouts_.actor_seconds)) continue;
    // Behind a node, an actor is silent on its own only once the node has been heard after
    // the actor's deadline. Until then the node may be what went silent (killed, cut off),
    // and its actors go out with it (DriverCore::retire_node), not one by one: an actor's
    // last message can be older than its node's last heartbeat by a heartbeat's period.
    if (protocol::NodeRoute::split(identity)) {
      const NodeState* node = node_on(protocol::NodeRoute::connection(identity));
      if (node && !node->dead && node->last_heard <= actor.last_heard + timeout) continue;
    }
    out.push_back(&actor);
  }
  return out;
}

std::vector<NodeState*> ActorRegistry::silent_nodes(Clock::time_point now) {
  std::vector<NodeState*> out;
  for (auto& [id, node] : nodes_) {
    // Node 0 is the driver itself.
    if (id != 0 && !node.dead && silent(node.last_heard, now, timeouts_.node_seconds)) out.push_back(&node);
  }
  return out;
}

int ActorRegistry::running_jobs() const {
  int n = 0;
  for (const auto& [identity, actor] : actors_) n += static_cast<int>(actor.running.size());
  return n;
}

int ActorRegistry::open_slots() const {
  int n = 0;
  for (const auto& [id, node] : nodes_) {
    if (!node.dead) n += node.actors - static_cast<int>(node.ended_slots.size());
  }
  return n;
}

int ActorRegistry::open_local_slots() const {
  auto it = nodes_.find(0);
  return it == nodes_.end() ? 0 : it->second.actors - static_cast<int>(it->second.ended_slots.size());
}

bool ActorRegistry::settled(Clock::time_point now) const {
  for (const auto& [id, node] : nodes_) {
    if (node.dead || static_cast<int>(node.settled_slots.size()) >= node.actors) continue;
    if (!silent(node.joined, now, timeouts_.settle_seconds)) return false;
  }
  return true;
}

int ActorRegistry::sharing(const ActorState& actor, const std::map<std::pair<std::string, std::string>, int>& seen_on) const {
  // Ready actors on the same host and device.
  const auto found = seen_on.find({actor.host, actor.device});
  const int seen = found == seen_on.end() ? 0 : found->second;
  auto node = nodes_.find(actor.node_id);
  if (node == nodes_.end()) return std::max(1, seen);
  // The CPU's memory is shared by all the node's actors, started yet or not.
  if (actor.device == "cpu") return std::max({1, seen, node->second.actors});
  // A node gives each actor one GPU of its own (CUDA_VISIBLE_DEVICES), where all of them
  // call it cuda:0: counting by name would split one GPU's memory among them all.
  if (!node->second.devices.empty()) return 1;
  return std::max(1, seen);
}

std::vector<packing::ActorSpec> ActorRegistry::capacities(int max_members, packing::MixedPacks mixed) const {
  // Counted once: 10,000 actors each counting the others would take the driver seconds at
  // every batch of Readys.
  std::map<std::pair<std::string, std::string>, int> seen_on;
  for (const auto& [identity, other] : actors_) {
    if (other.ready && !other.dead && other.capacity_shared) ++seen_on[{other.host, other.device}];
  }
  std::vector<packing::ActorSpec> out;
  for (const auto& [identity, actor] : actors_) {
    if (!actor.ready || actor.dead) continue;
    packing::ActorSpec spec;
    spec.id = actor.id;
    spec.device = actor.device;
    spec.capacity_bytes = actor.capacity_bytes;
    if (actor.capacity_shared) {
      auto node = nodes_.find(actor.node_id);
      if (spec.capacity_bytes == 0 && node != nodes_.end()) {
        // The actor could not tell: the node's declared memory for that device.
        const auto& devices = node->second.devices;
        if (actor.device == "cpu") {
          spec.capacity_bytes = node->second.memory_bytes;
        } else if (actor.local_index >= 0 && actor.local_index < static_cast<int>(devices.size())) {
          spec.capacity_bytes = devices[actor.local_index].memory_bytes;
        }
      }
      spec.capacity_bytes /= sharing(actor, seen_on);
    }
    spec.base_bytes = actor.base_bytes;
    spec.max_members = max_members;
    spec.max_units = packing::units_per_actor(mixed, actor.device);
    out.push_back(spec);
  }
  return out;
}

}  // namespace packtune
