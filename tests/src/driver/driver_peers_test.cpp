// The driver core's peers (driver_peers.cpp): actors and nodes that go silent, exit, come
// back, or stop reading, and the heartbeats between them (docs/faults.md).
#include "fake_fleet.hpp"

using namespace packtune;
using namespace packtune::testing;

TEST_CASE("driver core: an actor silent past actor_timeout_seconds loses its trials, which finish elsewhere") {
  Fleet f(sweep("random", 4, 4, 1, "never"));
  f.join("a");
  f.join("b");
  f.silent.insert("a");  // a takes a trial and never reports
  f.turn();
  REQUIRE(std::count(f.assigned_to.begin(), f.assigned_to.end(), "a") == 1);
  const TrialId lost = f.assigned[std::find(f.assigned_to.begin(), f.assigned_to.end(), "a") - f.assigned_to.begin()].trial;
  // b trains the others; a's trial waits for a's silence to count.
  for (int i = 0; i < 10; ++i) f.turn();
  CHECK(f.core->book().completed_jobs() == 3);
  CHECK_FALSE(f.core->registry().actors().at("a").dead);
  f.run(200);  // 100 s in turns of 0.5 s: a is retired after 60
  CHECK(f.core->registry().actors().at("a").dead);
  CHECK(f.core->book().completed_jobs() == 4);
  // The lost trial ran again on b, under a new lease.
  std::set<std::uint64_t> leases;
  for (std::size_t i = 0; i < f.assigned.size(); ++i) {
    if (f.assigned[i].trial == lost) {
      leases.insert(f.assigned[i].lease);
      if (leases.size() == 2) CHECK(f.assigned_to[i] == "b");
    }
  }
  CHECK(leases.size() == 2);
  CHECK(f.rows().size() == 4);
}

TEST_CASE("driver core: after a partition the retired actor's report is refused and it is told to rejoin") {
  Fleet f(sweep("random", 3, 4, 1, "never"));
  f.join("a");
  f.join("b");
  f.silent.insert("a");
  f.turn();
  const auto on_a = std::find(f.assigned_to.begin(), f.assigned_to.end(), "a") - f.assigned_to.begin();
  REQUIRE(on_a < static_cast<long>(f.assigned.size()));
  const proto::Assign held = f.assigned[on_a];
  for (int i = 0; i < 130 && !f.core->registry().actors().at("a").dead; ++i) f.turn();
  CHECK(f.core->registry().actors().at("a").dead);
  // The partition heals: a reports the job it was given before.
  proto::Report late;
  late.trial = held.trial;
  late.budget = held.budget;
  late.final = true;
  late.lease = held.lease;
  late.metrics = {{"val_accuracy", 0.99}};
  f.outbox.clear();
  f.say("a", late);
  CHECK(f.core->refused_reports() == 1);
  REQUIRE(f.outbox.size() == 1);
  CHECK(std::holds_alternative<proto::Rejoin>(f.outbox.front().message));
  f.outbox.clear();
  f.run();
  for (const auto& row : f.rows()) CHECK(row["val_accuracy"].get<double>() != 0.99);
  CHECK(f.core->book().completed_jobs() == 3);
}

TEST_CASE("driver core: a local actor's exit retires it at once, without the heartbeat timeout") {
  auto json = sweep("random", 2, 4, 1, "never");
  json["actors"] = 2;
  Fleet f(json);
  for (int slot = 0; slot < 2; ++slot) {
    proto::Hello hello;
    hello.host = "h";
    hello.pid = 500 + slot;
    hello.node_id = 0;
    hello.local_index = slot;
    f.say("s" + std::to_string(slot), hello);
    f.say("s" + std::to_string(slot), proto::Ready{"cpu", 8 * GiB, false, 0});
  }
  f.silent.insert("s0");
  f.turn();
  f.core->on_local_actor_exited(proto::ActorExited{0, 500, "killed by signal 9", false, false}, f.now);
  CHECK(f.core->registry().actors().at("s0").dead);
  f.run();
  CHECK(f.core->book().completed_jobs() == 2);
  CHECK(f.rows().size() == 2);
}

// A hung actor (SIGSTOP, a plugin that never returns) is silent while its node is not: the
// node, or the loop for the driver's own, is told to kill it, so that the slot restarts.
TEST_CASE("driver core: a silent actor of a node that still speaks is killed; one behind a silent node is not") {
  auto json = sweep("random", 3, 4, 1, "never");
  json["actors"] = 1;
  Fleet f(json);
  for (const auto& node : {"n1", "n2"}) f.join_node(node, 1);
  f.join_slot("own", 0, 0, 500);
  f.join_slot("on_n1", 1, 0, 600);
  f.join_slot("on_n2", 2, 0, 700);
  f.join_slot("by_hand", -1, -1, 800);
  for (const auto& actor : {"own", "on_n1", "on_n2", "by_hand"}) f.silent.insert(actor);
  std::vector<std::pair<std::string, proto::KillActor>> kills;
  for (int i = 0; i < 130; ++i) {
    f.say("n1", proto::Heartbeat{});  // n1 answers; n2 is cut off with its actor
    f.turn();
    for (const auto& s : f.last_sent) {
      if (auto* k = std::get_if<proto::KillActor>(&s.message)) kills.emplace_back(s.to, *k);
    }
  }
  for (const auto& actor : {"own", "on_n1", "on_n2", "by_hand"}) CHECK(f.core->registry().actors().at(actor).dead);
  REQUIRE(kills.size() == 1);
  CHECK(kills[0].first == "n1");
  CHECK(kills[0].second.local_index == 0);
  CHECK(kills[0].second.pid == 600);
  CHECK(kills[0].second.reason.find("no message for 60 s") != std::string::npos);
  const auto local = f.core->take_hung_local_actors();
  REQUIRE(local.size() == 1);
  CHECK(local[0].local_index == 0);
  CHECK(local[0].pid == 500);
  CHECK(f.core->take_hung_local_actors().empty());
}

// A node's actors speak through its one connection (node/node_relay.hpp): when the node goes
// silent they go out of service with it, though one was heard more lately than the node, and
// when it is heard again they are asked to rejoin at once, before any of them speaks.
TEST_CASE("driver core: a node's actors go out of service with their node, and are asked back with it") {
  auto json = sweep("random", 4, 4, 1, "never");
  json["actors"] = 0;
  Fleet f(json);
  f.join_node("n1", 2);
  for (int slot = 0; slot < 2; ++slot) f.join_slot("n1/" + std::to_string(slot), 1, slot, 600 + slot);
  f.silent = {"n1/0", "n1/1"};
  f.turn();
  // The connection goes: the node is silent from now, and its slot 1 spoke last 20 s later.
  for (int i = 0; i < 40; ++i) f.turn();
  f.say("n1/1", proto::Heartbeat{});
  for (int i = 0; i < 85; ++i) f.turn();  // 62.5 s after the node's last word
  const auto& actors = f.core->registry().actors();
  CHECK(f.core->registry().nodes().at(1).dead);
  CHECK(actors.at("n1/0").dead);
  CHECK(actors.at("n1/1").dead);  // heard 42.5 s ago: retired with its node, not on its own
  CHECK(f.core->registry().running_jobs() == 0);

  f.outbox.clear();
  f.say("n1", proto::Heartbeat{});
  std::set<std::string> asked;
  for (const auto& sent : f.outbox) {
    if (std::holds_alternative<proto::Rejoin>(sent.message)) asked.insert(sent.to);
  }
  CHECK(asked == std::set<std::string>{"n1/0", "n1/1"});
  CHECK_FALSE(f.core->registry().nodes().at(1).dead);
}

// A node's relay heartbeats the actors behind it (node/node_relay.hpp): the driver sends
// heartbeats to its own and to actors started alone only.
TEST_CASE("driver core: actors behind a node's relay get no heartbeat from the driver") {
  auto json = sweep("random", 1, 4, 1, "never");
  json["actors"] = 0;
  Fleet f(json);
  f.join_node("n1", 1);
  const auto behind = proto::NodeRoute::join(proto::NodeRoute::fresh_routing_id(), std::string("\0\0\0\0\1", 5));
  f.join_slot(behind, 1, 0, 600);
  f.join_slot("by_hand", -1, -1, 700);
  f.silent = {behind, "by_hand"};  // nothing said: the driver owes each a heartbeat
  std::map<std::string, int> heartbeats;
  for (int i = 0; i < 20; ++i) {  // 10 s, a heartbeat of 1 s
    f.turn();
    f.core->send_heartbeats(f.now);
    for (const auto& sent : f.outbox) heartbeats[sent.to] += std::holds_alternative<proto::Heartbeat>(sent.message);
    f.outbox.clear();
  }
  CHECK(heartbeats["by_hand"] >= 4);
  CHECK(heartbeats[behind] == 0);
  CHECK(heartbeats["n1"] >= 4);
}

// The driver cannot see into a node: a slot whose process never joins (stopped before its
// Hello) holds the run join_timeout_seconds and the longest restart delay, not for ever.
TEST_CASE("driver core: a node's slots that never bring an actor end the run after join_timeout_seconds and 30 s") {
  auto json = sweep("random", 3, 4, 1, "never");
  json["join_timeout_seconds"] = 10;
  Fleet f(json);
  f.join_node("n1", 2);
  const auto start = f.now;
  std::string error;
  try {
    for (int i = 0; i < 200; ++i) {
      f.say("n1", proto::Heartbeat{});
      f.turn();
    }
  } catch (const Error& e) {
    error = e.what();
  }
  CHECK(error.find("none of the 2 actor slot(s) of the nodes joined within 10 s") != std::string::npos);
  CHECK(f.now - start >= std::chrono::seconds(40));
  CHECK(f.now - start <= std::chrono::seconds(41));
}

// The router's pipe to a peer that stopped reading fills up, and the driver's send is refused
// rather than left waiting (protocol/zmq_channel.hpp): the peer goes out of service, a node
// with every actor behind it, and comes back when heard again.
TEST_CASE("driver core: a peer that stops reading goes out of service, a node with its actors") {
  auto json = sweep("random", 4, 4, 1, "never");
  json["actors"] = 0;
  Fleet f(json);
  const auto node = proto::NodeRoute::fresh_routing_id();
  // As a real node: its agent speaks through the relay too, under a route of its own there.
  const auto agent = proto::NodeRoute::join(node, std::string("\0\0\0\0\x09", 5));
  f.join_node(agent, 2);
  std::vector<std::string> behind;
  for (int slot = 0; slot < 2; ++slot) {
    behind.push_back(proto::NodeRoute::join(node, std::string("\0\0\0\0", 4) + static_cast<char>(1 + slot)));
    f.join_slot(behind.back(), 1, slot, 600 + slot);
  }
  f.join_slot("by_hand", -1, -1, 700);
  f.busy = {behind[0], behind[1], "by_hand"};  // their jobs stay running
  for (int i = 0; i < 4; ++i) f.turn();
  REQUIRE(f.core->registry().running_jobs() == 3);

  // The node's queue fills: the next message to one of its actors is refused.
  f.full = {node};
  f.core->send_heartbeats(f.now + std::chrono::seconds(5));
  f.core->peer_stalled(behind[1]);
  f.turn();
  const auto& actors = f.core->registry().actors();
  CHECK(f.core->registry().nodes().at(1).dead);
  CHECK(actors.at(behind[0]).dead);
  CHECK(actors.at(behind[1]).dead);
  CHECK_FALSE(actors.at("by_hand").dead);
  CHECK(f.core->registry().running_jobs() == 1);

  // It still speaks but reads nothing: it stays out, and no Rejoin is lost in its queue.
  for (int i = 0; i < 6; ++i) {
    f.say(agent, proto::Heartbeat{});
    f.say(behind[0], proto::Heartbeat{});
    CHECK(f.core->registry().nodes().at(1).dead);
    CHECK(actors.at(behind[0]).asked_to_rejoin == false);
    f.turn();
  }
  CHECK(f.core->registry().nodes().at(1).dead);

  f.full = {"by_hand"};
  f.core->peer_stalled("by_hand");
  f.turn();
  CHECK(actors.at("by_hand").dead);
  CHECK(f.core->registry().running_jobs() == 0);

  // The node reads again: once a probe goes through, what it and its actors say brings them
  // back (each is asked to rejoin). The actor started by hand, likewise.
  const auto rejoins_since = [&f](std::size_t from) {
    std::set<std::string> asked;
    for (std::size_t i = from; i < f.all_sent.size(); ++i) {
      if (std::holds_alternative<proto::Rejoin>(f.all_sent[i].message)) asked.insert(f.all_sent[i].to);
    }
    return asked;
  };
  std::size_t mark = f.all_sent.size();
  CHECK(rejoins_since(0).empty());
  f.full = {"by_hand"};
  for (int i = 0; i < 4; ++i) f.turn();
  f.say(agent, proto::Heartbeat{});
  f.turn();
  CHECK(rejoins_since(mark) == std::set<std::string>(behind.begin(), behind.end()));
  CHECK_FALSE(f.core->registry().nodes().at(1).dead);
  mark = f.all_sent.size();
  f.full.clear();
  // A probe is taken for through at the look for silence after it (one a second here).
  for (int i = 0; i < 6; ++i) f.turn();
  CHECK(rejoins_since(mark) == std::set<std::string>{"by_hand"});
}
