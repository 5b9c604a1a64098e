// The driver core's placement of jobs (driver_dispatch.cpp, docs/planner.md): packs split
// after running out of memory, the tuner asked only when there is room, throughput profiles
// that hold no job, and a rung's promotions planned together.
#include "fake_fleet.hpp"

using namespace packtune;
using namespace packtune::testing;

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
