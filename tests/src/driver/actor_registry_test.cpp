#include <catch2/catch.hpp>

#include "driver/actor_registry.hpp"
#include "protocol/node_route.hpp"

using namespace packtune;
using Clock = ActorRegistry::Clock;

namespace {

constexpr std::int64_t GiB = std::int64_t{1} << 30;

protocol::Hello hello(const std::string& host, int node_id, int local_index, std::int64_t pid) {
  protocol::Hello h;
  h.host = host;
  h.node_id = node_id;
  h.local_index = local_index;
  h.pid = pid;
  return h;
}

protocol::NodeHello node_hello(const std::string& host, int actors, std::vector<protocol::NodeDevice> devices = {}) {
  protocol::NodeHello h;
  h.host = host;
  h.actors = actors;
  h.memory_bytes = 64 * GiB;
  h.devices = std::move(devices);
  return h;
}

ActorState& ready_actor(ActorRegistry& registry, const std::string& identity, const protocol::Hello& h,
                        const std::string& device, std::int64_t capacity, Clock::time_point now) {
  auto& actor = registry.add_actor(identity, h, now);
  registry.mark_ready(actor, protocol::Ready{device, capacity, true, 0});
  return actor;
}

std::int64_t capacity_of(const ActorRegistry& registry, int actor_id) {
  for (const auto& spec : registry.capacities(8)) {
    if (spec.id == actor_id) return spec.capacity_bytes;
  }
  return -1;  // not offered to the planner
}

}  // namespace

TEST_CASE("a node's actors split a shared device by the node's declared actors, restarts or not") {
  const auto t0 = Clock::now();
  ActorRegistry registry({60, 60, 30});
  const auto& node = registry.add_node("node-a", node_hello("a", 2), t0);
  CHECK(node.id == 1);
  auto& first = ready_actor(registry, "x1", hello("a", node.id, 0, 100), "cpu", 8 * GiB, t0);
  // Only one of two has joined: it still gets half the machine, not all of it.
  CHECK(capacity_of(registry, first.id) == 4 * GiB);
  auto& second = ready_actor(registry, "x2", hello("a", node.id, 1, 101), "cpu", 8 * GiB, t0);
  CHECK(capacity_of(registry, second.id) == 4 * GiB);
  registry.mark_dead(second);
  CHECK(capacity_of(registry, second.id) == -1);
  CHECK(capacity_of(registry, first.id) == 4 * GiB);
  CHECK(registry.capacities(8).front().max_members == 8);

  SECTION("actors started by hand split by the ready actors on their host and device, as before") {
    auto& a = ready_actor(registry, "h1", hello("b", -1, -1, 200), "cpu", 8 * GiB, t0);
    auto& b = ready_actor(registry, "h2", hello("b", -1, -1, 201), "cpu", 8 * GiB, t0);
    CHECK(capacity_of(registry, a.id) == 4 * GiB);
    registry.mark_dead(b);
    CHECK(capacity_of(registry, a.id) == 8 * GiB);
  }
}

TEST_CASE("a GPU node's actors each have a GPU, though each calls it cuda:0") {
  const auto t0 = Clock::now();
  ActorRegistry registry({60, 60, 30});
  const auto& node =
      registry.add_node("gpu-node", node_hello("g", 2, {{"H100", 80 * GiB}, {"H100", 40 * GiB}}), t0);
  auto& a = ready_actor(registry, "g0", hello("g", node.id, 0, 10), "cuda:0", 80 * GiB, t0);
  auto& b = ready_actor(registry, "g1", hello("g", node.id, 1, 11), "cuda:0", 0, t0);
  CHECK(capacity_of(registry, a.id) == 80 * GiB);
  // It could not tell its memory: the node's figure for its GPU.
  CHECK(capacity_of(registry, b.id) == 40 * GiB);
}

TEST_CASE("actors are linked to their node's slots, and an exit finds the live actor of that process") {
  const auto t0 = Clock::now();
  ActorRegistry registry({60, 60, 30});
  registry.add_local_node("here", 1, t0);
  auto& actor = registry.add_actor("l0", hello("here", 0, 0, 555), t0);
  CHECK(actor.node_id == 0);
  CHECK(registry.actor_in_slot(0, 0, 555) == &actor);
  CHECK(registry.actor_in_slot(0, 0, 556) == nullptr);  // a restarted process is another actor
  CHECK(registry.actor_in_slot(1, 0, 555) == nullptr);
  registry.mark_dead(actor);
  CHECK(registry.actor_in_slot(0, 0, 555) == nullptr);
  // A node id no node has links to nothing.
  CHECK(registry.add_actor("stray", hello("x", 7, 0, 1), t0).node_id == -1);
  CHECK(registry.add_actor("l0b", hello("here", 0, 0, 556), t0).id == 2);
}

TEST_CASE("silent actors and nodes are found by their timeouts (node 0, the driver, is never silent)") {
  const auto t0 = Clock::now();
  ActorRegistry registry({60, 20, 30});
  registry.add_local_node("here", 1, t0);
  auto& node = registry.add_node("n", node_hello("a", 1), t0);
  auto& actor = registry.add_actor("a0", hello("a", node.id, 0, 1), t0);
  CHECK(registry.silent_actors(t0 + std::chrono::seconds(59)).empty());
  CHECK(registry.silent_nodes(t0 + std::chrono::seconds(19)).empty());
  const auto later = t0 + std::chrono::seconds(61);
  REQUIRE(registry.silent_nodes(later).size() == 1);
  CHECK(registry.silent_nodes(later)[0]->id == node.id);
  REQUIRE(registry.silent_actors(later).size() == 1);
  actor.last_heard = later;
  CHECK(registry.silent_actors(later).empty());
  registry.mark_dead(actor);
  CHECK(registry.silent_actors(later + std::chrono::hours(1)).empty());
}

TEST_CASE("an actor behind a node is silent on its own only once the node was heard after its deadline") {
  const auto t0 = Clock::now();
  const auto at = [t0](double seconds) {
    return t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  };
  ActorRegistry registry({2, 2, 30});
  const auto connection = protocol::NodeRoute::fresh_routing_id();
  // As a real node: its agent speaks through the relay, under a route of its own there.
  auto& node = registry.add_node(protocol::NodeRoute::join(connection, std::string("\0\0\0\0\x09", 5)),
                                 node_hello("a", 2), t0);
  auto& idle = registry.add_actor(protocol::NodeRoute::join(connection, std::string("\0\0\0\0\1", 5)),
                                  hello("a", node.id, 0, 1), t0);
  auto& alone = registry.add_actor("by_hand", hello("b", -1, -1, 2), t0);
  // The node's last heartbeat came half a second after the actor's last message (a driver
  // that paused, then read what had queued): at 2.2 s the actor is past its deadline but the
  // node is not, and the node may be what went silent. An actor started by hand has no node.
  node.last_heard = at(0.5);
  auto silent = registry.silent_actors(at(2.2));
  REQUIRE(silent.size() == 1);
  CHECK(silent[0] == &alone);
  CHECK(registry.silent_nodes(at(2.2)).empty());
  // The node killed: it falls silent too, and its actors go out with it (DriverCore::retire_node).
  CHECK(registry.silent_nodes(at(2.6)).size() == 1);
  // The node alive and heard after the actor's deadline: the actor alone is silent (hung).
  node.last_heard = at(2.1);
  silent = registry.silent_actors(at(2.2));
  REQUIRE(silent.size() == 2);
  CHECK((silent[0] == &idle || silent[1] == &idle));
  // A node already out of service holds nothing back.
  node.last_heard = at(0.5);
  registry.mark_node_dead(node);
  CHECK(registry.silent_actors(at(2.2)).size() == 2);
}

TEST_CASE("open slots and settling: what may still bring an actor, and when the first jobs go out") {
  const auto t0 = Clock::now();
  ActorRegistry registry({60, 60, 30});
  registry.add_local_node("here", 2, t0);
  CHECK(registry.open_slots() == 2);
  CHECK_FALSE(registry.any_actor_joined());
  CHECK_FALSE(registry.settled(t0));
  auto& a = ready_actor(registry, "l0", hello("here", 0, 0, 1), "cpu", GiB, t0);
  CHECK(a.ready);
  CHECK_FALSE(registry.settled(t0));
  CHECK(registry.settled(t0 + std::chrono::seconds(31)));  // slot 1 is late: the others go on
  registry.slot_exited(0, 1, false);  // it died before joining and restarts
  CHECK(registry.settled(t0));
  CHECK(registry.open_slots() == 2);
  registry.slot_exited(0, 1, true);  // given up
  CHECK(registry.open_slots() == 1);

  auto& node = registry.add_node("n", node_hello("b", 3), t0 + std::chrono::seconds(100));
  CHECK(registry.open_slots() == 4);
  CHECK_FALSE(registry.settled(t0 + std::chrono::seconds(100)));
  registry.mark_node_dead(node);
  CHECK(registry.open_slots() == 1);
  CHECK(registry.settled(t0 + std::chrono::seconds(100)));
  registry.slot_exited(0, 5, true);  // no such slot: ignored
  CHECK(registry.open_slots() == 1);
}

TEST_CASE("actors are found by id; a Hello again from the same identity takes a new id and drops the old") {
  const auto t0 = Clock::now();
  ActorRegistry registry({60, 60, 30});
  const int a = registry.add_actor("a", hello("h", -1, -1, 1), t0).id;
  const int b = registry.add_actor("b", hello("h", -1, -1, 2), t0).id;
  REQUIRE(registry.actor_by_id(a) != nullptr);
  CHECK(registry.actor_by_id(a)->identity == "a");
  CHECK(registry.actor_by_id(b)->pid == 2);
  const int again = registry.add_actor("a", hello("h", -1, -1, 3), t0).id;
  CHECK(again != a);
  CHECK(registry.actor_by_id(a) == nullptr);
  REQUIRE(registry.actor_by_id(again) != nullptr);
  CHECK(registry.actor_by_id(again)->pid == 3);
  CHECK(registry.actor_by_id(-1) == nullptr);
  CHECK(registry.actor_by_id(again + 1) == nullptr);
}

TEST_CASE("a node rejoining a resumed driver gets its old id back, and links actors that said it first") {
  const auto t0 = Clock::now();
  ActorRegistry registry({60, 60, 30});
  // The resumed driver hears the actor of node 2 before node 2 itself.
  auto& actor = registry.add_actor("x1", hello("b", 2, 0, 200), t0);
  CHECK(actor.node_id == -1);
  auto again = node_hello("b", 1);
  again.node_id = 2;
  CHECK(registry.add_node("node-b", again, t0).id == 2);
  CHECK(actor.node_id == 2);
  CHECK(registry.actor_in_slot(2, 0, 200) == &actor);
  // A fresh node takes the next id after it; one asking for a taken id gets a fresh one too.
  CHECK(registry.add_node("node-c", node_hello("c", 1), t0).id == 3);
  CHECK(registry.add_node("node-d", again, t0).id == 4);
}

TEST_CASE("live actors are counted through Hellos, deaths and Hellos again") {
  ActorRegistry registry({});
  const auto now = Clock::now();
  auto& a = registry.add_actor("a", hello("h", -1, 0, 1), now);
  registry.add_actor("b", hello("h", -1, 1, 2), now);
  CHECK(registry.live_actors() == 2);
  registry.mark_dead(a);
  registry.mark_dead(a);  // twice is once
  CHECK(registry.live_actors() == 1);
  registry.add_actor("a", hello("h", -1, 0, 3), now);  // the dead one joins anew
  CHECK(registry.live_actors() == 2);
  registry.add_actor("b", hello("h", -1, 1, 4), now);  // a live one says Hello again
  CHECK(registry.live_actors() == 2);
  int counted = 0;
  for (const auto& [identity, actor] : registry.actors()) counted += !actor.dead;
  CHECK(counted == 2);
  CHECK(registry.actor("a")->pid == 3);
  CHECK(registry.actor("c") == nullptr);
}

TEST_CASE("a node declared dead that says NodeHello again is the new node under its name") {
  ActorRegistry registry({});
  const auto now = Clock::now();
  auto& first = registry.add_node("node:x", node_hello("m", 2), now);
  registry.add_node("node:y", node_hello("n", 2), now);
  REQUIRE(registry.node("node:x")->id == first.id);
  registry.mark_node_dead(first);
  const int second = registry.add_node("node:x", node_hello("m", 2), now).id;
  CHECK(second != first.id);
  CHECK(registry.node("node:x")->id == second);
  CHECK_FALSE(registry.node("node:x")->dead);
  CHECK(registry.node("node:y")->host == "n");
  CHECK(registry.node("node:z") == nullptr);
}
