// DriverCore: actors and nodes that come and go (docs/faults.md). An actor's process that
// ends, or a peer silent past actor_timeout_seconds, is retired and its trials go back to the
// queue; one heard again after that drops its pack and joins anew.
#include <algorithm>
#include <utility>

#include <spdlog/spdlog.h>

#include "driver/driver_core.hpp"
#include "protocol/node_route.hpp"

namespace packtune {

namespace proto = protocol;

void DriverCore::add_local_node(const std::string& host, Clock::time_point now) {
  now_ = now;
  registry_.add_local_node(host, config_.actors, now_);
}

std::string DriverCore::join_command() const {
  return fmt::format("packtune node --driver {}{}", endpoint_, curve_ ? " --keys DIR" : "");
}

// A node declared dead is heard again: its connection is back, and the actors that went out
// of service with it are asked to rejoin now, together, rather than each when it next speaks.
void DriverCore::on_node_revived(NodeState& node) {
  int asked = 0;
  for (auto& [identity, actor] : registry_.actors()) {
    if (actor.node_id != node.id || !actor.retired_with_node || actor.asked_to_rejoin) continue;
    actor.asked_to_rejoin = true;
    send(actor, proto::Rejoin{"its node was out of service (silent past actor_timeout_seconds, or not reading); its "
                              "jobs were given to other actors"});
    ++asked;
  }
  spdlog::warn("node {} on {} is heard again; its {} actor(s) retired with it are asked to rejoin", node.id, node.host,
               asked);
}

void DriverCore::on_node_message(NodeState& node, const proto::Message& message) {
  if (auto* exited = std::get_if<proto::ActorExited>(&message)) {
    on_actor_exited(node, *exited);
  } else if (!std::holds_alternative<proto::Heartbeat>(message)) {
    spdlog::warn("unexpected {} from node {}", proto::verb(message), node.id);
  }
}

void DriverCore::on_local_actor_exited(const proto::ActorExited& exited, Clock::time_point now) {
  now_ = now;
  on_actor_exited(*registry_.node_by_id(0), exited);
}

// An actor's process ended: its trials go back to the queue now, not after the heartbeat
// timeout.
void DriverCore::on_actor_exited(NodeState& node, const proto::ActorExited& m) {
  registry_.slot_exited(node.id, m.local_index, !m.restarting);
  if (m.input_error) actor_input_error_ = true;
  const std::string where =
      node.id == 0 ? "see " + options_.local_log_path(m.local_index)
                   : fmt::format("node {} on {}; see its actor-{}.log", node.id, node.host, m.local_index);
  const std::string what = m.how + (m.restarting ? ", restarting" : "") + "; " + where;
  if (auto* actor = registry_.actor_in_slot(node.id, m.local_index, m.pid)) {
    retire(*actor, "its process " + what);
  } else if (!m.restarting) {
    actor_failures_.push_back(fmt::format("actor {} of node {} {}", m.local_index, node.id, what));
  }
}

// A retired actor speaks again: a partition healed, or it was only slow. Its jobs run
// elsewhere now, so what it says of them is refused; it drops them and joins anew.
void DriverCore::ask_to_rejoin(ActorState& actor, const proto::Message& message) {
  if (std::holds_alternative<proto::Report>(message) || std::holds_alternative<proto::TrialFailed>(message)) {
    ++refused_reports_;
    spdlog::info("refusing {} from retired actor {}: its jobs were given to other actors", proto::verb(message),
                 actor.id);
  }
  // One that stopped reading is asked once a message to it goes through again.
  if (actor.asked_to_rejoin || unreadable(actor.identity)) return;
  actor.asked_to_rejoin = true;
  spdlog::warn("actor {} on {} is heard again after it was retired; it drops its pack and rejoins", actor.id,
               actor.host);
  send(actor, proto::Rejoin{"it was out of service (silent past actor_timeout_seconds, or not reading); its jobs "
                            "were given to other actors"});
}

// Takes an actor out of service; its trials go back to the queue and start again.
void DriverCore::retire(ActorState& actor, const std::string& why) {
  if (actor.dead) return;
  registry_.mark_dead(actor);
  for (const auto id : actor.running) tell_failed(book_.lost_actor(id, checkpoint_of(id)));
  actor.running.clear();
  placement_.update_actors(registry_);
  spdlog::warn("actor {} is out of service: {}", actor.id, why);
}

// A silent actor of a node that still speaks is not cut off: it hangs (SIGSTOP, a plugin that
// never returns). Killed, its slot restarts within the node's limits, so no wait depends on it
// coming back by itself. A node silent too may be behind a partition, where the actor may be
// healthy: it is retired only, and rejoins when heard again. Actors started by hand have no
// node to kill them.
void DriverCore::kill_hung(const ActorState& actor, const std::string& why) {
  if (actor.node_id < 0 || actor.local_index < 0) return;
  const NodeState* node = registry_.node_by_id(actor.node_id);
  if (!node) return;
  const proto::KillActor kill{actor.local_index, actor.pid, "actor " + std::to_string(actor.id) + ": " + why};
  if (node->id == 0) {
    hung_local_.push_back(kill);
    return;
  }
  const auto half = std::chrono::duration<double>(config_.actor_timeout_seconds / 2);
  if (node->dead || now_ - node->last_heard > half) return;
  spdlog::warn("actor {} hangs while node {} on {} answers: the node kills process {} and restarts the slot",
               actor.id, node->id, node->host, actor.pid);
  send_to(node->identity, kill);
}

void DriverCore::retire_node(NodeState& node, const std::string& why) {
  registry_.mark_node_dead(node);
  spdlog::warn("node {} on {} is out of service: {}", node.id, node.host, why);
  // Its actors speak through its one connection (node/node_relay.hpp): what silenced the
  // node silenced them, and they go out of service with it, not one by one as their own
  // timeouts fall due. Heard again, each is asked to rejoin.
  for (auto& [identity, actor] : registry_.actors()) {
    if (actor.node_id != node.id || actor.dead) continue;
    retire(actor, fmt::format("its node {} is out of service", node.id));
    actor.retired_with_node = true;
  }
}

bool DriverCore::unreadable(const std::string& identity) const {
  return unreadable_.find(proto::NodeRoute::connection(identity)) != unreadable_.end();
}

void DriverCore::check_heartbeats(Clock::time_point now) {
  now_ = now;
  for (const auto& identity : std::exchange(stalled_, {})) {
    const auto why = "it stopped reading: the driver's queue to it is full";
    // An actor behind a node shares the node's pipe: the node stopped reading. Until a
    // message to it goes through again, nothing it says brings it back: a Rejoin would be
    // lost in the full queue, and the actors asked with it never asked again.
    const std::string connection(proto::NodeRoute::connection(identity));
    if (auto* node = registry_.node_on(connection)) {
      unreadable_[connection] = Probe{node->identity};
      if (!node->dead) retire_node(*node, why);
      // An actor that joined behind it since it went out (its Welcome refused) goes out too.
      for (auto& [actor_identity, actor] : registry_.actors()) {
        if (actor.node_id != node->id) continue;
        if (!actor.dead) retire(actor, why);
        actor.asked_to_rejoin = false;
      }
    } else if (auto* actor = registry_.actor(identity)) {
      unreadable_[connection] = Probe{identity};
      retire(*actor, why);
      actor->asked_to_rejoin = false;
    }
  }
  // A look goes over every actor (10,000 of them take the driver milliseconds), and under
  // load the loop comes here after every batch of messages: one look per sixtieth of the
  // timeout (a second at the default 60 s) finds silence at most that late; short timeouts
  // get ten looks a second.
  if (now < next_silence_check_) return;
  const double period = std::clamp(config_.actor_timeout_seconds / 60, 0.1, 1.0);
  next_silence_check_ = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(period));
  // A probe not refused since the last look went through: the peer reads again, and what it
  // says from then on counts as from any peer.
  for (auto it = unreadable_.begin(); it != unreadable_.end();) {
    if (it->second.sent) {
      it = unreadable_.erase(it);
      continue;
    }
    it->second.sent = true;
    send_to(it->second.target, proto::Heartbeat{});
    ++it;
  }
  // Nodes first: an actor silent because its node's connection went goes out with the node.
  for (auto* node : registry_.silent_nodes(now)) {
    retire_node(*node, fmt::format("no message for {} s", static_cast<int>(config_.actor_timeout_seconds)));
  }
  for (auto* actor : registry_.silent_actors(now)) {
    const auto why = fmt::format("no message for {:g} s (actor_timeout_seconds)", config_.actor_timeout_seconds);
    retire(*actor, why);
    kill_hung(*actor, why);
  }
}

void DriverCore::send_heartbeats(Clock::time_point now) {
  now_ = now;
  const auto period = std::chrono::duration<double>(config_.heartbeat_seconds);
  if (now - last_heartbeat_ <= period) return;
  // An actor that got an Assign or anything else since the last round needs no heartbeat, nor
  // does one behind a node: its relay heartbeats it while the node hears the driver, which
  // spares the driver a message a second for each actor of a machine.
  for (auto& [identity, actor] : registry_.actors()) {
    if (!actor.dead && now - actor.last_sent > period && !proto::NodeRoute::split(identity)) {
      send(actor, proto::Heartbeat{});
    }
  }
  for (const auto& [id, node] : registry_.nodes()) {
    if (id != 0 && !node.dead) send_to(node.identity, proto::Heartbeat{});
  }
  last_heartbeat_ = now;
}

void DriverCore::shutdown_actors() {
  for (auto& [identity, actor] : registry_.actors()) {
    if (!actor.dead) send(actor, proto::Shutdown{});
  }
  for (const auto& [id, node] : registry_.nodes()) {
    if (id != 0 && !node.dead) send_to(node.identity, proto::Shutdown{});
  }
}

}  // namespace packtune
