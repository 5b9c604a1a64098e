#pragma once
// The driver core's tests' fake fleet: a DriverCore and the actors it talks to, without
// sockets or processes, in virtual time, so that every scenario takes milliseconds. The fake
// actors answer an Assign with one report per job, whose metric is a fixed function of the
// trial's config and budget, and write the checkpoint file the report names, so promotions
// and restarts resume from it. Each driver_*_test.cpp beside it tests one part of the core.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../../temp_dir.hpp"
#include "actors/checkpoint_file.hpp"
#include "driver/driver_core.hpp"
#include "driver/journal.hpp"
#include "protocol/node_route.hpp"
#include "spec/checkpoint_name.hpp"

namespace packtune::testing {

namespace proto = packtune::protocol;
using Clock = DriverCore::Clock;
using tuners::TrialId;


inline constexpr std::int64_t GiB = std::int64_t{1} << 30;

inline nlohmann::json sweep(const std::string& tuner, int trials, double max_budget, int max_pack, const std::string& fuse) {
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
inline double metric_of(const tuners::TrialConfig& config, double budget) {
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
inline std::set<std::tuple<TrialId, double, double>> outcomes(const std::vector<nlohmann::json>& rows) {
  std::set<std::tuple<TrialId, double, double>> out;
  for (const auto& row : rows) {
    out.insert({row["trial"].get<TrialId>(), row["budget"].get<double>(), row["val_accuracy"].get<double>()});
  }
  return out;
}

// --- what tests ask of the fleet ------------------------------------------------------------

// The job `actor` holds now (one per silent actor after a turn).
inline proto::Assign held_by(const Fleet& f, const std::string& actor) {
  for (std::size_t i = f.assigned.size(); i-- > 0;) {
    if (f.assigned_to[i] == actor) return f.assigned[i];
  }
  FAIL("no job went to " << actor);
  return {};
}

inline std::string token_of(const Fleet& f, const std::string& actor) {
  return f.core->registry().actors().at(actor).transfer_token;
}

inline std::string name_of(TrialId trial, double budget) {
  return "trial-" + std::to_string(trial) + "-budget-" + std::to_string(int(budget)) + ".h5";
}

// A report of `job` at its budget.
inline proto::Report report_of(const proto::Assign& job, std::map<std::string, double> metrics, bool final = true) {
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

}  // namespace packtune::testing
