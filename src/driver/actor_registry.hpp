#pragma once
// The driver's book of nodes and actors: who joined (Hello, NodeHello), which node and slot an
// actor runs in, who is ready, dead or silent, which slots may still bring an actor, and the
// capacities the planner sees. No sockets, no processes, no trials: the driver sends, and
// retires an actor's trials; this only records. Times are passed in, so tests need no clock.
#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "packing/planner.hpp"
#include "protocol/protocol.hpp"
#include "tuners/trial_config.hpp"

namespace packtune {

struct ActorState {
  int id = -1;
  std::string identity;  // its ZeroMQ identity on the driver's router
  std::string host;
  std::int64_t pid = 0;
  int node_id = -1;      // -1: started by hand
  int said_node_id = -1;  // as its Hello said: a node that rejoins a resumed driver after it links it
  int local_index = -1;  // its slot on its node
  std::string device;
  bool ready = false;
  bool dead = false;
  std::int64_t capacity_bytes = 0;  // as the actor reported it (Ready)
  bool capacity_shared = true;
  std::int64_t base_bytes = 0;
  std::string device_model, build, data_context;  // its Ready's: the profile cache's key
  std::set<tuners::TrialId> running;
  bool asked_to_rejoin = false;  // retired, heard again, and told to join anew
  bool retired_with_node = false;  // out of service because its node's connection went silent
  std::string transfer_token;    // names its transfer socket's messages (Welcome.transfer_token)
  std::chrono::steady_clock::time_point last_heard;
  std::chrono::steady_clock::time_point last_sent;  // by the driver: any message is a sign of life
};

struct NodeState {
  int id = -1;
  std::string identity;  // empty for node 0, the driver's own actors
  std::string host;
  std::int64_t pid = 0;
  int cores = 0;
  std::int64_t memory_bytes = 0;
  std::vector<protocol::NodeDevice> devices;  // empty: CPU actors
  int actors = 0;                              // the slots it declared
  std::set<int> settled_slots;  // a slot's actor got ready or died, or its process exited
  std::set<int> ended_slots;    // slots given up, or whose process ended for good
  bool dead = false;
  std::chrono::steady_clock::time_point joined;
  std::chrono::steady_clock::time_point last_heard;
};

class ActorRegistry {
 public:
  using Clock = std::chrono::steady_clock;

  struct Timeouts {
    double actor_seconds = 60;   // silence that retires an actor
    double node_seconds = 60;    // silence that declares a node dead
    double settle_seconds = 30;  // how long the first jobs wait for a node's actors
  };

  explicit ActorRegistry(Timeouts timeouts) : timeouts_(timeouts) {}
  // by_id_ points into actors_.
  ActorRegistry(const ActorRegistry&) = delete;
  ActorRegistry& operator=(const ActorRegistry&) = delete;

  // Node 0: the actors the driver starts itself, on its own machine.
  NodeState& add_local_node(const std::string& host, int actors, Clock::time_point now);
  // A `packtune node` that said NodeHello; it gets the next node id, or the one it asks for
  // (NodeHello.node_id, a node rejoining a resumed driver) when no node holds it.
  NodeState& add_node(const std::string& identity, const protocol::NodeHello& hello, Clock::time_point now);
  NodeState* node(const std::string& identity);
  // The node whose connection `connection` is (protocol::NodeRoute::connection): a node says
  // NodeHello through its relay, under a route of its own there, and its actors under theirs.
  NodeState* node_on(std::string_view connection);
  NodeState* node_by_id(int id);
  const std::map<int, NodeState>& nodes() const { return nodes_; }

  // An actor that said Hello; it gets the next actor id. A Hello again from the same
  // identity replaces the earlier state.
  ActorState& add_actor(const std::string& identity, const protocol::Hello& hello, Clock::time_point now);
  ActorState* actor(const std::string& identity);
  // The actor whose Welcome gave `token`, or nullptr; a Hello again gets a new one.
  ActorState* actor_by_token(const std::string& token);
  void give_token(ActorState& actor, const std::string& token);
  ActorState* actor_by_id(int id);
  const ActorState* actor_by_id(int id) const;
  std::map<std::string, ActorState>& actors() { return actors_; }
  const std::map<std::string, ActorState>& actors() const { return actors_; }
  // The live actor that node `node_id` started in slot `local_index` as process `pid`.
  ActorState* actor_in_slot(int node_id, int local_index, std::int64_t pid);
  bool slot_joined(int node_id, int local_index, std::int64_t pid) const {
    return const_cast<ActorRegistry*>(this)->actor_in_slot(node_id, local_index, pid) != nullptr;
  }

  void mark_ready(ActorState& actor, const protocol::Ready& ready);
  // Out of service: the caller requeues its trials. The only way an actor dies: live_actors()
  // counts on it.
  void mark_dead(ActorState& actor);
  // The process of a node's slot ended; `final`: it will not start again.
  void slot_exited(int node_id, int local_index, bool final);

  // Live actors and nodes silent for longer than their timeout at `now`; an actor behind a
  // node that has not been heard since the actor's deadline is left to the node's.
  std::vector<ActorState*> silent_actors(Clock::time_point now);
  std::vector<NodeState*> silent_nodes(Clock::time_point now);
  void mark_node_dead(NodeState& node) { node.dead = true; }
  // A node declared dead speaks again (a partition healed): it counts as live.
  void revive_node(NodeState& node) { node.dead = false; }

  int live_actors() const { return live_actors_; }
  int running_jobs() const;
  bool any_actor_joined() const { return !actors_.empty(); }
  // Slots of live nodes that may still bring an actor: starting, running, or restarting;
  // of node 0 (the driver's own) only, or of the other nodes only.
  int open_slots() const;
  int open_local_slots() const;
  int open_node_slots() const { return open_slots() - open_local_slots(); }
  // Whether every live node's slots have an actor that is ready (or died), or the node
  // joined more than settle_seconds ago: the first jobs then spread over all of them.
  bool settled(Clock::time_point now) const;

  // The planner's view of the live, ready actors: on a node, actors sharing one device
  // split its memory by the node's declared actors, so a restart does not change the
  // others' share; for actors started by hand (and the driver's own GPUs), by the ready
  // actors seen on that host and device.
  std::vector<packing::ActorSpec> capacities(int max_members,
                                             packing::MixedPacks mixed = packing::MixedPacks::Always) const;

 private:
  // `seen_on`: the ready actors whose capacity is shared, by host and device.
  int sharing(const ActorState& actor, const std::map<std::pair<std::string, std::string>, int>& seen_on) const;

  Timeouts timeouts_;
  std::map<std::string, ActorState> actors_;  // by ZeroMQ identity
  // By actor id (ids count up from 0): the driver looks one up for every job it sends.
  // Null for an id whose identity said Hello again. Map nodes do not move, so these stay valid.
  std::vector<ActorState*> by_id_;
  // actors_ by identity, hashed: the identities of one node's actors share their first 37
  // bytes, which the map's comparisons read again at every level.
  std::unordered_map<std::string, ActorState*> by_identity_;
  std::map<int, NodeState> nodes_;            // by node id
  // Node id by ZeroMQ identity, and the actors not dead: the driver asks both for every
  // message it takes, which at 10,000 actors on 1,250 nodes must not scan.
  std::unordered_map<std::string, int> node_ids_;
  std::unordered_map<std::string, int> node_connections_;  // node_on's
  int live_actors_ = 0;
  std::map<std::string, std::string> by_token_;  // transfer token -> actor identity
  int next_actor_id_ = 0;
  int next_node_id_ = 1;  // 0 is the driver's own
};

}  // namespace packtune
