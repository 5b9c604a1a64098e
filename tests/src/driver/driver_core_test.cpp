// The driver's policy against a fake fleet, without sockets or processes, in virtual time:
// every scenario here takes milliseconds. The fake actors answer an Assign with one report per
// job, whose metric is a fixed function of the trial's config and budget, and write the
// checkpoint file the report names, so promotions and restarts resume from it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "../../temp_dir.hpp"
#include "actors/checkpoint_file.hpp"
#include "driver/driver_core.hpp"
#include "driver/journal.hpp"
#include "protocol/node_route.hpp"
#include "spec/checkpoint_name.hpp"

using namespace packtune;
namespace proto = packtune::protocol;
using Clock = DriverCore::Clock;
using tuners::TrialId;

namespace {

constexpr std::int64_t GiB = std::int64_t{1} << 30;

nlohmann::json sweep(const std::string& tuner, int trials, double max_budget, int max_pack, const std::string& fuse) {
  return {{"name", "fake"},
          {"seed", 3},
          {"budget", {{"unit", "steps"}, {"min", 1}, {"max", max_budget}}},
          {"tuner", {{"name", tuner}, {"trials", trials}}},
          {"actors", 0},
          {"max_pack", max_pack},
          {"fuse", fuse},
          {"model", {{"family", "mlp"}, {"depth", 1}, {"width", 32}, {"batch_size", 16}, {"optimizer", "adam"}}},
          {"space", {{"lr", {{"type", "loguniform"}, {"low", 1e-4}, {"high", 1e-1}}}}}};
}

// A trial's metric: higher for a larger lr and budget, the same on every actor.
double metric_of(const tuners::TrialConfig& config, double budget) {
  return std::get<double>(config.at("lr")) * 10 + budget / 1000;
}

struct Sent {
  std::string to;
  proto::Message message;
};

// A driver core and the actors it talks to. Time moves only when a test says so.
struct Fleet {
  testing::TempDir dir;
  ExperimentConfig config;
  Clock::time_point now = Clock::time_point{} + std::chrono::hours(1);
  std::vector<Sent> outbox;  // what the core sent, not yet taken by an actor
  std::unique_ptr<DriverCore> core;
  std::map<std::string, int> ids;           // actor identity -> the id its Welcome gave
  std::set<std::string> silent;             // actors that hear but do not answer
  std::set<std::string> busy;               // actors that answer all but Assigns, which wait in held
  std::vector<Sent> held;
  std::vector<proto::Assign> assigned;      // every Assign, in order
  std::vector<std::string> assigned_to;     // and the actor it went to
  std::int64_t capacity = 8 * GiB;          // each fake actor's memory for trials
  std::vector<std::vector<TrialId>> waves;  // the trials of the Assigns of each step
  int profiles_asked = 0;
  bool answer_profiles = true;  // false: an actor that never finishes a profile
  std::optional<Clock::time_point> first_assign;
  std::vector<Sent> last_sent;  // what the core sent in the last turn
  bool hdf5 = false;  // write checkpoints the store can copy (pbt's exploits), not a stand-in
  std::vector<Sent> all_sent;  // everything the core sent
  // Peers whose queue is full: a send to them (or to an actor behind them) is refused, as the
  // router refuses it (Driver::deliver), and nothing reaches them. A direct peer's refusal is
  // reported at once; one behind a node at the start of the next turn, as the driver's loop
  // finds it when it flushes the node's bundle (driver/node_outbox.hpp).
  std::set<std::string> full;
  std::vector<std::string> refused_at_flush;

  explicit Fleet(const nlohmann::json& json, bool resume = false) : config(parse_config(json, "fake.json")) {
    config.source = json;
    open(resume);
  }

  std::string out() const { return dir.path().string() + "/run"; }

  void open(bool resume) {
    core = std::make_unique<DriverCore>(
        config, DriverCore::Options{out(), 0, [](int i) { return "actor-" + std::to_string(i) + ".log"; }},
        [this](const std::string& to, const proto::Message& m) {
          const auto route = proto::NodeRoute::split(to);
          if (full.count(to) || (route && full.count(std::string(route->first)))) {
            if (route) {
              refused_at_flush.push_back(to);
            } else {
              core->peer_stalled(to);
            }
            return;
          }
          outbox.push_back({to, m});
        },
        now);
    core->listening_on("ipc:///fake", false);
    std::unique_ptr<Journal> journal;
    std::unique_ptr<ResultsWriter> results;
    std::optional<TunerJournal::Recovered> recovered;
    if (resume) {
      auto reopened = Journal::reopen(out() + "/journal.jsonl");
      recovered = core->tuning().replay(reopened.entries);
      journal = std::make_unique<Journal>(std::move(reopened.journal));
      results = std::make_unique<ResultsWriter>(out(), recovered->rows, config.metric, config.mode, best_budget(config.tuner, config.max_budget));
    } else {
      ResultsWriter::create_folder(out());
      results = std::make_unique<ResultsWriter>(out(), config.source, config.metric, config.mode, best_budget(config.tuner, config.max_budget));
      journal = std::make_unique<Journal>(
          Journal::create(out() + "/journal.jsonl", {{"packtune_journal", 1}, {"name", "fake"}, {"config", json()}}));
    }
    auto store = std::make_unique<CheckpointStore>(out() + "/checkpoints", TransferOptions{},
                                                   [](const std::string&) {});
    core->attach(std::move(journal), std::move(results), std::move(store), now);
    if (recovered) core->restore(*recovered);
    core->add_local_node("h", now);
  }

  nlohmann::json json() const { return config.source; }

  void say(const std::string& actor, const proto::Message& m) { core->on_message(actor, m, now); }

  void join(const std::string& actor, const std::string& device = "cpu") {
    proto::Hello hello;
    hello.host = "h";
    hello.pid = 1000 + static_cast<int>(ids.size());
    say(actor, hello);
    ids[actor] = core->registry().actors().at(actor).id;
    say(actor, proto::Ready{device, capacity, false, 0});
  }

  // An actor of node `node`'s slot `slot` (process `pid`) joins as `identity` and is ready.
  void join_slot(const std::string& identity, int node, int slot, std::int64_t pid) {
    proto::Hello hello;
    hello.host = "h";
    hello.pid = pid;
    hello.node_id = node;
    hello.local_index = slot;
    say(identity, hello);
    ids[identity] = core->registry().actors().at(identity).id;
    say(identity, proto::Ready{"cpu", 8 * GiB, false, 0});
  }

  // A `packtune node` of `actors` slots says NodeHello as `identity`.
  void join_node(const std::string& identity, int actors) {
    proto::NodeHello hello;
    hello.host = "n";
    hello.pid = 7;
    hello.actors = actors;
    say(identity, hello);
  }

  std::string checkpoint_path(TrialId trial, double budget) const {
    return out() + "/checkpoints/trial-" + std::to_string(trial) + "-budget-" + std::to_string(int(budget)) + ".h5";
  }

  // Each actor trains what it was assigned: the final report, after its checkpoint.
  void answer(const Sent& sent) {
    if (silent.count(sent.to)) return;
    if (auto* assign = std::get_if<proto::Assign>(&sent.message)) {
      if (busy.count(sent.to)) {
        held.push_back(sent);
        return;
      }
      proto::Report report;
      report.trial = assign->trial;
      report.budget = assign->budget;
      report.metrics = {{"val_accuracy", metric_of(assign->config, assign->budget)}};
      report.final = true;
      report.lease = assign->lease;
      if (!assign->resume_from.empty()) report.start_budget = core->store()->newest_budget(assign->trial);
      if (assign->checkpoint) {
        report.checkpoint = checkpoint_path(assign->trial, assign->budget);
        if (hdf5) {
          actors::TrialCheckpoint c;
          c.trial = assign->trial;
          c.budget = assign->budget;
          c.seed = assign->seed;
          c.config = tuners::to_json(assign->config);
          actors::write_checkpoint(report.checkpoint, c, false);
        } else {
          std::ofstream(report.checkpoint) << "weights";
        }
      }
      say(sent.to, report);
    } else if (auto* profile = std::get_if<proto::Profile>(&sent.message)) {
      ++profiles_asked;
      if (!answer_profiles) return;
      say(sent.to, proto::Profiled{profile->key, "cpu", {1, 2, 4}, {0.010, 0.012, 0.014}, ""});
    }
  }

  // One turn of the loop: the actors that answer say they live, the core steps, and the
  // actors answer what it sent. True when over.
  bool turn() {
    now += std::chrono::milliseconds(500);
    for (const auto& to : std::exchange(refused_at_flush, {})) core->peer_stalled(to);
    for (const auto& [actor, id] : ids) {
      if (!silent.count(actor)) say(actor, proto::Heartbeat{});
    }
    const bool over = core->step(now);
    core->commit();
    std::vector<Sent>& sent = last_sent;
    sent.clear();
    sent.swap(outbox);
    all_sent.insert(all_sent.end(), sent.begin(), sent.end());
    std::vector<TrialId> wave;
    for (const auto& s : sent) {
      if (auto* assign = std::get_if<proto::Assign>(&s.message)) {
        assigned.push_back(*assign);
        if (!first_assign) first_assign = now;
        assigned_to.push_back(s.to);
        wave.push_back(assign->trial);
      }
    }
    if (!wave.empty()) waves.push_back(wave);
    for (const auto& s : sent) answer(s);
    return over;
  }

  void run(int max_turns = 1000) {
    for (int i = 0; i < max_turns; ++i) {
      if (turn()) return;
    }
    FAIL("the sweep did not end in " << max_turns << " turns");
  }

  std::vector<nlohmann::json> rows() const { return Journal::read(out() + "/results.jsonl"); }
};

// results.jsonl's (trial, budget, metric) lines, the parts that must not depend on scheduling.
std::set<std::tuple<TrialId, double, double>> outcomes(const std::vector<nlohmann::json>& rows) {
  std::set<std::tuple<TrialId, double, double>> out;
  for (const auto& row : rows) {
    out.insert({row["trial"].get<TrialId>(), row["budget"].get<double>(), row["val_accuracy"].get<double>()});
  }
  return out;
}

}  // namespace

TEST_CASE("driver core: a random sweep on two fake actors ends with every trial's report") {
  Fleet f(sweep("random", 6, 4, 1, "never"));
  f.join("a");
  f.join("b");
  f.run();
  CHECK(f.core->book().completed_jobs() == 6);
  CHECK(f.rows().size() == 6);
  std::set<TrialId> trials;
  for (const auto& a : f.assigned) trials.insert(a.trial);
  CHECK(trials.size() == 6);
  // max_pack 1: never more jobs out than actors.
  for (const auto& wave : f.waves) CHECK(wave.size() <= 2);
}

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

TEST_CASE("driver core: a pack that ran out of memory is split into smaller units, and its trials finish") {
  const auto json = sweep("random", 4, 4, 4, "always");
  // What the planner reckons a unit of the four needs: the actor gets half as much again.
  std::int64_t unit_of_four = 0;
  {
    Fleet probe(json);
    probe.join("a");
    probe.silent.insert("a");
    probe.turn();
    REQUIRE(probe.waves.size() == 1);
    REQUIRE(probe.waves.front().size() == 4);  // trials of one width share one unit
    unit_of_four = probe.core->plan().actors.at(0).estimated_bytes;
  }
  Fleet f(json);
  f.capacity = unit_of_four * 3 / 2;
  f.join("a");
  f.silent.insert("a");
  f.turn();
  REQUIRE(f.waves.size() == 1);
  REQUIRE(f.waves.front().size() == 4);
  proto::OutOfMemory oom;
  oom.message = "CPU memory limit";
  for (const auto& a : f.assigned) {
    oom.trials.push_back(a.trial);
    oom.leases.push_back(a.lease);
  }
  f.say("a", oom);
  f.silent.clear();
  f.run();
  // The shape's figure doubled: four no longer fit, so they went out in smaller units.
  CHECK(f.core->book().completed_jobs() == 4);
  CHECK(f.core->book().failed_trials() == 0);
  REQUIRE(f.waves.size() > 2);
  for (std::size_t i = 1; i < f.waves.size(); ++i) CHECK(f.waves[i].size() < 4);
  CHECK(f.assigned.size() == 8);  // each trial went out twice
}

TEST_CASE("driver core: while every actor is busy the tuner keeps its later trials, configs not yet drawn") {
  // A sampler that learns (tpe) draws a trial's config when the driver takes its job: jobs
  // taken while no actor can start them are drawn without the results that come before they
  // start. One job may wait ahead; the rest stay with the tuner, also when a job of another
  // shape waits for room. Each actor holds its jobs a turn, so they are busy when more come.
  for (const char* tuner : {"random", "asha", "hyperband"}) {
    DYNAMIC_SECTION(tuner) {
      auto json = sweep(tuner, 27, 9, 4, "auto");
      json["space"]["width"] = {{"type", "choice"}, {"values", {32, 64}}};  // two shapes
      Fleet f(json);
      f.join("a");
      f.join("b");
      f.busy = {"a", "b"};
      bool over = false;
      for (int i = 0; i < 500 && !over; ++i) {
        const std::vector<Sent> done(std::move(f.held));
        f.held.clear();
        over = f.turn();
        f.busy.clear();
        for (const auto& s : done) f.answer(s);
        f.busy = {"a", "b"};
      }
      REQUIRE(over);
      CHECK(f.rows().size() >= 27);
      // Between two results at most what the actors hold (2 x max_pack 4) and one job waiting.
      int streak = 0, longest = 0;
      for (const auto& e : Journal::read(f.out() + "/journal.jsonl")) {
        if (e.contains("result")) streak = 0;
        if (e.contains("job") && e["job"]["kind"] == "start") longest = std::max(longest, ++streak);
      }
      CHECK(longest <= 9);
    }
  }
}

TEST_CASE("driver core: no job waits for a throughput profile; the actor of a shape's first job profiles it after its jobs") {
  Fleet f(sweep("random", 4, 4, 4, "auto"));
  // GPUs, where the prior fuses: the first units are sized by it, and the profile sizes the next.
  f.join("a", "cuda:0");
  f.join("b", "cuda:1");
  f.turn();
  REQUIRE_FALSE(f.assigned.empty());
  std::vector<std::size_t> asked;  // indexes in the turn's messages
  for (std::size_t i = 0; i < f.last_sent.size(); ++i) {
    if (std::holds_alternative<proto::Profile>(f.last_sent[i].message)) asked.push_back(i);
  }
  REQUIRE(asked.size() == 1);  // one shape, one profile, on one actor
  const auto& to = f.last_sent[asked.front()].to;
  // The actor asked got jobs of the shape (every trial here is of one shape) in this turn, and
  // gets the request after all of them, so that its unit is in its pack when it starts timing.
  bool assigned = false;
  for (std::size_t i = 0; i < f.last_sent.size(); ++i) {
    if (f.last_sent[i].to != to || !std::holds_alternative<proto::Assign>(f.last_sent[i].message)) continue;
    assigned = true;
    CHECK(i < asked.front());
  }
  CHECK(assigned);
  f.run();
  CHECK(f.profiles_asked == 1);
  CHECK(f.core->book().completed_jobs() == 4);
}

TEST_CASE("driver core: on CPUs, where the prior fuses nothing, jobs go out while an actor profiles their shape") {
  Fleet f(sweep("random", 4, 4, 4, "auto"));
  f.join("a");
  f.join("b");
  f.turn();
  // The turn that asked for the profile sent the jobs too: a CPU actor trains one unit at a
  // time, and each took one at once, alone.
  CHECK(f.profiles_asked == 1);
  REQUIRE(f.waves.size() == 1);
  CHECK(f.waves.front().size() == 2);
  f.run();
  CHECK(f.profiles_asked == 1);
  CHECK(f.core->book().completed_jobs() == 4);
}

TEST_CASE("driver core: Hyperband's promotions of a rung go out together, resuming from their checkpoints") {
  auto json = sweep("hyperband", 0, 9, 1, "never");
  json["tuner"] = {{"name", "hyperband"}, {"eta", 3}};
  Fleet f(json);
  for (const auto* actor : {"a", "b", "c"}) f.join(actor);
  f.run();
  std::size_t promoted = 0;
  for (const auto& a : f.assigned) promoted += !a.resume_from.empty();
  CHECK(promoted > 0);
  // Some step handed out more than one promotion at once: the rung was re-planned together.
  bool together = false;
  for (const auto& wave : f.waves) {
    std::size_t resumed = 0;
    for (const auto trial : wave) {
      for (const auto& a : f.assigned) resumed += a.trial == trial && !a.resume_from.empty() ? 1 : 0;
    }
    together = together || resumed > 1;
  }
  CHECK(together);
}

TEST_CASE("driver core: a sweep resumed from its journal ends with the reports of an uninterrupted one") {
  auto json = sweep("hyperband", 0, 9, 1, "never");
  json["tuner"] = {{"name", "hyperband"}, {"eta", 3}};
  Fleet whole(json);
  whole.join("a");
  whole.run();

  Fleet cut(json);
  cut.join("a");
  for (int i = 0; i < 6; ++i) cut.turn();
  REQUIRE(cut.core->book().completed_jobs() > 0);
  cut.core.reset();  // the driver dies; its actor with it
  cut.outbox.clear();
  cut.ids.clear();
  cut.open(true);
  cut.join("b");
  cut.run();
  CHECK(outcomes(cut.rows()) == outcomes(whole.rows()));
}

// The loop commits the journal in groups: a killed driver can leave a trial whose job went out
// and whose checkpoint was written, though the journal never heard of it. Resuming from that
// checkpoint would skip the reports below it (cli/resume, seen twice in busy suites).
TEST_CASE("driver core: a resume ignores a checkpoint of a trial the journal never heard of, past its first report") {
  auto json = sweep("hyperband", 0, 9, 1, "never");
  json["tuner"] = {{"name", "hyperband"}, {"eta", 3}};
  json["budget"]["report_every"] = 1;
  Fleet cut(json);
  cut.join("a");
  for (int i = 0; i < 4; ++i) cut.turn();
  TrialId newest = -1;
  for (const auto& a : cut.assigned) newest = std::max(newest, a.trial);
  cut.core.reset();
  cut.outbox.clear();
  cut.ids.clear();
  const TrialId past = newest + 1, before = newest + 2;
  std::ofstream(cut.checkpoint_path(past, 1)) << "weights";
  std::ofstream(cut.out() + "/checkpoints/trial-" + std::to_string(before) + "-budget-0.5.h5") << "weights";
  const auto resumed_from = cut.assigned.size();
  cut.open(true);
  cut.join("b");
  cut.run();
  std::map<TrialId, proto::Assign> first;
  for (auto i = resumed_from; i < cut.assigned.size(); ++i) first.emplace(cut.assigned[i].trial, cut.assigned[i]);
  REQUIRE(first.count(past));
  REQUIRE(first.count(before));
  CHECK(first.at(past).resume_from.empty());
  REQUIRE(first.at(before).resume_from.size() == 1);
  CHECK(first.at(before).resume_budget == 0.5);
}

TEST_CASE("driver core: a profile that never comes holds no job") {
  Fleet f(sweep("random", 8, 4, 4, "auto"));
  f.answer_profiles = false;
  f.join("a", "cuda:0");
  f.join("b", "cuda:1");
  const auto start = f.now;
  f.run();
  CHECK(f.profiles_asked == 1);
  REQUIRE(f.first_assign);
  // The first turn placed jobs (the loop turns every 0.5 s here).
  CHECK(*f.first_assign - start <= std::chrono::milliseconds(500));
  CHECK(f.core->book().completed_jobs() == 8);
}

// --- admission (docs/security.md, After registration) -----------------------------------------------------

namespace {

// The job `actor` holds now (one per silent actor after a turn).
proto::Assign held_by(const Fleet& f, const std::string& actor) {
  for (std::size_t i = f.assigned.size(); i-- > 0;) {
    if (f.assigned_to[i] == actor) return f.assigned[i];
  }
  FAIL("no job went to " << actor);
  return {};
}

std::string token_of(const Fleet& f, const std::string& actor) {
  return f.core->registry().actors().at(actor).transfer_token;
}

std::string name_of(TrialId trial, double budget) {
  return "trial-" + std::to_string(trial) + "-budget-" + std::to_string(int(budget)) + ".h5";
}

// A report of `job` at its budget.
proto::Report report_of(const proto::Assign& job, std::map<std::string, double> metrics, bool final = true) {
  proto::Report report;
  report.trial = job.trial;
  report.budget = job.budget;
  report.final = final;
  report.lease = job.lease;
  report.metrics = std::move(metrics);
  return report;
}

// What the core sent to `to` since the outbox was last cleared.
template <class T>
std::vector<T> sent_to(const Fleet& f, const std::string& to) {
  std::vector<T> out;
  for (const auto& s : f.outbox) {
    if (s.to == to && std::holds_alternative<T>(s.message)) out.push_back(std::get<T>(s.message));
  }
  return out;
}

}  // namespace

TEST_CASE("driver core: a peer that never said Hello gets no work and no file, and nothing it says is taken") {
  Fleet f(sweep("random", 2, 4, 1, "never"));
  f.join("a");
  f.silent.insert("a");
  f.say("x", proto::Ready{"cpu", 8 * GiB, false, 0});
  f.turn();
  for (const auto& to : f.assigned_to) CHECK(to == "a");
  CHECK(f.core->registry().actors().count("x") == 0);
  const auto job = held_by(f, "a");

  // Its report of a's job, with the right lease, is no result.
  f.say("x", report_of(job, {{"val_accuracy", 1.0}}));
  CHECK(f.rows().empty());
  CHECK(f.core->book().at(job.trial).actor == f.ids.at("a"));

  // Transfers without a live actor's token: not even an answer.
  f.outbox.clear();
  const auto name = name_of(job.trial, job.budget);
  std::ofstream(f.out() + "/checkpoints/" + name) << "real";
  for (const std::string& token : {std::string(), std::string("0123456789abcdef0123456789abcdef")}) {
    CHECK_FALSE(f.core->admit_transfer("x-t", proto::Offer{1, name, 10, token}, f.now));
    CHECK_FALSE(f.core->admit_transfer("x-t", proto::FetchChunk{2, name, 0, 1 << 20, token}, f.now));
  }
  CHECK_FALSE(f.core->admit_transfer("x-t", proto::Chunk{1, 0, 10, ""}, f.now));
  CHECK(f.outbox.empty());
  CHECK(f.core->admission().refusals() >= 6);

  f.silent.clear();
  f.outbox.clear();
  f.join("a");  // a restarted: its job goes back to the queue
  f.run();
  CHECK(f.core->book().completed_jobs() == 2);
  for (const auto& row : f.rows()) CHECK(row["val_accuracy"].get<double>() != 1.0);
}

TEST_CASE("driver core: an actor offers and fetches only checkpoints of the trials it trains, at their budgets") {
  Fleet f(sweep("random", 3, 4, 1, "never"));
  for (const auto* actor : {"a", "b"}) {
    f.join(actor);
    f.silent.insert(actor);  // each holds a job
  }
  f.turn();
  const auto on_a = held_by(f, "a");
  const auto on_b = held_by(f, "b");
  const auto a = token_of(f, "a");
  const auto b = token_of(f, "b");
  REQUIRE(a.size() == 32);
  REQUIRE(a != b);

  const auto offer = [&](const std::string& token, TrialId trial, double budget, std::uint64_t size) {
    return f.core->admit_transfer("t", proto::Offer{7, name_of(trial, budget), size, token}, f.now);
  };
  CHECK(offer(a, on_a.trial, on_a.budget, 1000));
  CHECK(offer(a, on_a.trial, 1, 1000));  // inside the job (checkpoint_every is on)
  CHECK(offer(b, on_b.trial, on_b.budget, 1000));
  f.outbox.clear();
  CHECK_FALSE(offer(a, on_b.trial, on_b.budget, 1000));  // b's trial
  CHECK_FALSE(offer(a, on_a.trial, on_a.budget * 2, 1000));  // beyond its job
  CHECK_FALSE(offer(a, on_a.trial, on_a.budget, 0));
  CHECK_FALSE(offer(a, on_a.trial, on_a.budget, proto::kMaxCheckpointBytes + 1));
  CHECK_FALSE(f.core->admit_transfer("t", proto::Offer{7, "trial-x.h5", 10, a}, f.now));
  // A registered actor hears why, so that its save fails at once.
  const auto stored = sent_to<proto::Stored>(f, "t");
  REQUIRE(stored.size() == 5);
  CHECK_THAT(stored.front().error, Catch::Contains("not a trial this actor trains"));

  // A checkpoint a wrote inside its job: a may fetch it back (a restart would), b may not.
  const auto path = f.checkpoint_path(on_a.trial, 2);
  std::ofstream(path) << "weights";
  f.say("a", proto::Checkpointed{on_a.trial, on_a.lease, path, 2});
  REQUIRE(f.core->store()->has(on_a.trial));
  const auto fetch = [&](const std::string& token, const std::string& name) {
    return f.core->admit_transfer("t", proto::FetchChunk{8, name, 0, 1 << 20, token}, f.now);
  };
  CHECK(fetch(a, name_of(on_a.trial, 2)));
  f.outbox.clear();
  CHECK_FALSE(fetch(b, name_of(on_a.trial, 2)));
  CHECK_FALSE(fetch(a, name_of(on_a.trial, 3)));  // not a file of the store
  CHECK_FALSE(fetch(a, "../journal.jsonl"));
  CHECK(sent_to<proto::Chunk>(f, "t").size() == 3);

  // A checkpoint named for another trial is not recorded: the store would delete that file.
  const auto other = f.checkpoint_path(on_b.trial, 1);
  std::ofstream(other) << "b's";
  f.say("a", proto::Checkpointed{on_a.trial, on_a.lease, other, 3});
  CHECK(f.core->store()->newest_budget(on_a.trial) == 2);
  const auto next = f.checkpoint_path(on_a.trial, 3);
  std::ofstream(next) << "weights";
  f.say("a", proto::Checkpointed{on_a.trial, on_a.lease, next, 3});
  CHECK(f.core->store()->newest_budget(on_a.trial) == 3);
  CHECK_FALSE(std::filesystem::exists(path));  // a's older one goes
  CHECK(std::filesystem::exists(other));

  f.silent.clear();
  f.outbox.clear();
  for (const auto* actor : {"a", "b"}) f.join(actor);
  f.run();
  CHECK(f.core->book().completed_jobs() == 3);
}

TEST_CASE("driver core: a Hello again from a live actor sends its jobs back to the queue, and the run ends") {
  Fleet f(sweep("random", 3, 4, 1, "never"));
  f.join("a");
  f.silent.insert("a");
  f.turn();
  const auto first = held_by(f, "a");
  const int old_id = f.ids.at("a");
  f.silent.clear();
  f.join("a");  // Hello again, then Ready: it dropped its pack
  CHECK(f.ids.at("a") != old_id);
  CHECK(f.core->book().at(first.trial).actor != old_id);
  CHECK(f.core->registry().actor_by_id(old_id) == nullptr);
  f.run(100);  // 50 s: before the heartbeat timeout (60 s) could free the job
  CHECK(f.core->book().completed_jobs() == 3);
  CHECK(f.rows().size() == 3);
}

TEST_CASE("driver core: a report with a metric no model reports, or an infinite one, is refused and its job fails") {
  Fleet f(sweep("random", 4, 4, 1, "never"));
  f.join("a");
  f.silent.insert("a");
  std::vector<std::map<std::string, double>> hostile = {
      {{"val_accuracy", 0.5}, {"trial", 1e300}, {"budget", -7.0}},
      {{"val_accuracy", 0.5}, {std::string(100'000, 'm'), 1}},
      {{"val_loss", std::numeric_limits<double>::infinity()}},
  };
  for (const auto& metrics : hostile) {
    f.turn();
    const auto job = held_by(f, "a");
    f.outbox.clear();
    f.say("a", report_of(job, metrics));
    CHECK(sent_to<proto::Stop>(f, "a").size() == 1);
    CHECK(f.core->book().at(job.trial).actor == -1);
  }
  CHECK(f.rows().empty());
  CHECK(f.core->book().failed_trials() == 3);
  // A report at a budget outside its job is refused too.
  f.turn();
  auto job = held_by(f, "a");
  auto beyond = report_of(job, {{"val_accuracy", 0.5}}, false);
  beyond.budget = job.budget * 10;
  f.say("a", beyond);
  CHECK(f.rows().empty());
  CHECK(f.core->book().failed_trials() == 4);
  f.silent.clear();
  f.run();
  CHECK(f.rows().empty());

  // A diverged loss (NaN) is a result: ranked below everything, written.
  Fleet g(sweep("random", 1, 4, 1, "never"));
  g.join("a");
  g.silent.insert("a");
  g.turn();
  job = held_by(g, "a");
  g.say("a", report_of(job, {{"val_accuracy", 0.1}, {"val_loss", std::nan("")}, {"train_loss", 2.0}}));
  g.silent.clear();
  g.run();
  REQUIRE(g.rows().size() == 1);
  CHECK(g.rows().front()["trial"].get<TrialId>() == job.trial);
}

TEST_CASE("driver core: the tester may fetch the tested checkpoint, and a test answer with other metrics is refused") {
  Fleet f(sweep("random", 2, 4, 1, "never"));
  f.join("a");
  f.join("b");
  f.run();
  REQUIRE(f.core->test_wanted());
  f.outbox.clear();
  REQUIRE(f.core->ask_next_tester(f.now));
  std::string tester;
  std::optional<proto::Test> test;
  for (const auto& s : f.outbox) {
    if (auto* t = std::get_if<proto::Test>(&s.message)) {
      tester = s.to;
      test = *t;
    }
  }
  REQUIRE(test);
  REQUIRE_FALSE(test->checkpoints.empty());
  const std::string other = tester == "a" ? "b" : "a";
  const auto name = std::filesystem::path(test->checkpoints.front()).filename().string();
  CHECK(f.core->admit_transfer("t", proto::FetchChunk{3, name, 0, 1 << 20, token_of(f, tester)}, f.now));
  CHECK_FALSE(f.core->admit_transfer("t", proto::FetchChunk{3, name, 0, 1 << 20, token_of(f, other)}, f.now));

  f.say(tester, proto::Tested{test->trial, 4, {{"test_accuracy", 0.9}, {"trial", 1e300}}, ""});
  REQUIRE(f.core->test_answered());
  CHECK(f.core->record_test() == 0);
  CHECK(f.core->results()->test().is_null());
}

namespace {

nlohmann::json population(int members, int max_pack) {
  auto json = sweep("pbt", 0, 4, max_pack, "always");
  json["tuner"] = {{"name", "pbt"}, {"population", members}, {"interval", 1}, {"perturb", {"lr"}}};
  return json;
}

std::vector<TrialId> stopped(const Fleet& f) {
  std::vector<TrialId> out;
  for (const auto& s : f.all_sent) {
    if (const auto* stop = std::get_if<proto::Stop>(&s.message)) out.push_back(stop->trial);
  }
  return out;
}

}  // namespace

TEST_CASE("driver core: pbt's members stay in their units across generations, and a generation's jobs go out together") {
  Fleet f(population(8, 4));
  f.hdf5 = true;
  f.join("a");
  f.join("b");
  f.run();
  CHECK(f.rows().size() == 32);  // 8 members x 4 generations
  std::map<TrialId, std::pair<std::string, std::string>> place;  // each member's actor and unit
  std::size_t exploits = 0;
  for (std::size_t i = 0; i < f.assigned.size(); ++i) {
    const auto& a = f.assigned[i];
    CHECK(a.park == (a.budget < 4));
    exploits += a.exploit_from >= 0;
    const std::pair<std::string, std::string> here{f.assigned_to[i], a.unit};
    const auto [it, first] = place.try_emplace(a.trial, here);
    CHECK(it->second == here);  // the next job goes where the member is parked
    if (!first) CHECK(a.resume_budget == a.budget - 1);
  }
  CHECK(exploits == 6);  // 2 of 8 at each of the 3 generations' ends
  CHECK(stopped(f).empty());
  // Each actor's jobs of one pass: all but the last say more follow.
  for (const auto& actor : {"a", "b"}) {
    std::vector<bool> more;
    for (std::size_t i = 0; i < f.assigned.size(); ++i) {
      if (f.assigned_to[i] == actor) more.push_back(f.assigned[i].more);
    }
    REQUIRE(more.size() == 16);
    for (std::size_t g = 0; g < 4; ++g) {
      for (std::size_t k = 0; k < 4; ++k) CHECK(more[g * 4 + k] == (k < 3));
    }
  }
}

TEST_CASE("driver core: parked pbt members leave their place when a job needs the room") {
  for (const int members : {3, 4, 5}) {
    DYNAMIC_SECTION(members << " members, room for 2") {
      Fleet f(population(members, 2));
      f.hdf5 = true;
      f.join("a");
      f.run();
      CHECK(f.rows().size() == static_cast<std::size_t>(members * 4));
      // Each generation some park and the next need their room.
      CHECK(stopped(f).size() >= 3);
      for (const auto trial : stopped(f)) CHECK((trial >= 0 && trial < members));
    }
  }
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
