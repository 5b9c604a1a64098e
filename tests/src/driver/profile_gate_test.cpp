#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <memory>

#include "../../temp_dir.hpp"
#include "driver/profile_gate.hpp"
#include "mlp_shape.hpp"

using namespace packtune;
using Clock = ProfileGate::Clock;
using tuners::Job;

namespace {

using packtune::testing::mlp_shape;

constexpr std::int64_t GiB = std::int64_t{1} << 30;

// Two ready actors in the registry and the plan; actor 1 has less work planned.
struct Fixture {
  packing::Planner planner;
  packing::Plan plan;
  ActorRegistry registry{{60, 60, 30}};
  ProfileGate gate{planner, plan, registry, {true, 4, 120}};
  Clock::time_point t0 = Clock::now();

  Fixture() {
    for (int i = 0; i < 2; ++i) {
      protocol::Hello hello;
      hello.host = "h";
      hello.pid = 100 + i;
      auto& actor = registry.add_actor("a" + std::to_string(i), hello, t0);
      registry.mark_ready(actor, protocol::Ready{"cpu", 8 * GiB, true, 0});
      packing::ActorPlan a;
      a.actor.id = actor.id;
      a.actor.device = "cpu";
      a.estimated_seconds = i == 0 ? 10 : 1;
      plan.actors.push_back(a);
    }
  }

  ProfileGate::Admission admit(tuners::TrialId trial, const packing::TrialShape& shape, Clock::time_point now) {
    return gate.admit(Job::start(trial, {}, 1), shape, {}, {}, now);
  }
};

protocol::Profiled answer(const std::string& key) {
  return {key, "cpu", {1, 2, 4}, {0.010, 0.015, 0.025}, ""};
}

std::vector<tuners::TrialId> trials_of(const std::vector<Job>& jobs) {
  std::vector<tuners::TrialId> ids;
  for (const auto& job : jobs) ids.push_back(job.trial);
  return ids;
}

}  // namespace

TEST_CASE("a job of an unprofiled shape waits while the least loaded actor profiles it") {
  Fixture f;
  const auto shape = mlp_shape(256);
  auto first = f.admit(3, shape, f.t0);
  CHECK(first.held);
  REQUIRE(first.ask);
  CHECK(first.ask->actor == f.plan.actors[1].actor.id);
  CHECK(first.ask->profile.key == shape.key);
  CHECK(first.ask->profile.max_members == 4);
  // The shape is asked for once; its later jobs wait too.
  auto second = f.admit(1, shape, f.t0);
  CHECK(second.held);
  CHECK_FALSE(second.ask);
  CHECK(f.gate.held_jobs() == 2);
  CHECK(f.gate.expire(f.t0 + std::chrono::seconds(60)).empty());

  SECTION("the answer releases them in trial order and is filed in the planner") {
    auto released = f.gate.on_profiled(f.plan.actors[1].actor.id, answer(shape.key));
    CHECK(trials_of(released) == std::vector<tuners::TrialId>{1, 3});
    CHECK(f.gate.held_jobs() == 0);
    CHECK(f.planner.throughput_model().profiled("cpu", shape.key));
    // Profiled now: the next job of the shape goes on, and nothing is asked again.
    auto later = f.admit(5, shape, f.t0);
    CHECK_FALSE(later.held);
    CHECK_FALSE(later.ask);
  }
  SECTION("an answer with an error releases them too, leaving the shape to the prior") {
    auto failed = answer(shape.key);
    failed.error = "out of memory";
    CHECK(trials_of(f.gate.on_profiled(0, failed)) == std::vector<tuners::TrialId>{1, 3});
    CHECK_FALSE(f.planner.throughput_model().covered("", shape));
    // Not asked again: the actor would fail the same way, and the trials would wait for ever
    // (an actor_memory too small for the profile asked, failed and asked again without end).
    auto later = f.admit(5, shape, f.t0);
    CHECK_FALSE(later.held);
    CHECK_FALSE(later.ask);
  }
  SECTION("an answer nobody asked for changes nothing") {
    CHECK(f.gate.on_profiled(0, answer("cnn-16")).empty());
    CHECK(f.gate.held_jobs() == 2);
  }
  SECTION("a request older than the timeout is given up and its jobs released") {
    CHECK(trials_of(f.gate.expire(f.t0 + std::chrono::seconds(121))) == std::vector<tuners::TrialId>{1, 3});
    CHECK_FALSE(f.gate.asked(shape.key));
    // Not asked again: the live actor that let it time out would hold the jobs as long again.
    auto later = f.admit(5, shape, f.t0 + std::chrono::seconds(122));
    CHECK_FALSE(later.held);
    CHECK_FALSE(later.ask);
  }
}

TEST_CASE("a second shape of a profiled architecture is profiled without waiting") {
  Fixture f;
  const auto narrow = mlp_shape(128);
  const auto wide = mlp_shape(512);
  CHECK(f.admit(0, narrow, f.t0).held);
  f.gate.on_profiled(0, answer(narrow.key));
  auto admission = f.admit(1, wide, f.t0);
  CHECK_FALSE(admission.held);
  REQUIRE(admission.ask);  // its own figures still help
  CHECK(admission.ask->profile.key == wide.key);
  CHECK(f.gate.held_jobs() == 0);
}

TEST_CASE("a wider shape is not profiled where a narrower one of its family gained nothing from fusing") {
  Fixture f;
  const auto narrow = mlp_shape(128);
  const auto wide = mlp_shape(512);
  CHECK(f.admit(0, narrow, f.t0).held);
  // Two members take twice one's time, as on a CPU that one member already keeps busy.
  f.gate.on_profiled(0, {narrow.key, "cpu", {1, 2}, {0.010, 0.020}, ""});
  auto wider = f.admit(1, wide, f.t0);
  CHECK_FALSE(wider.held);
  CHECK_FALSE(wider.ask);
  CHECK_FALSE(f.gate.asked(wide.key));

  SECTION("a narrower shape is still profiled: it may gain where a wider one does not") {
    auto narrower = f.admit(2, mlp_shape(64), f.t0);
    CHECK_FALSE(narrower.held);
    CHECK(narrower.ask);
  }
  SECTION("an actor of a kind no profile speaks for keeps the shape profiled") {
    protocol::Hello hello;
    hello.host = "g";
    hello.pid = 200;
    auto& gpu = f.registry.add_actor("g0", hello, f.t0);
    f.registry.mark_ready(gpu, protocol::Ready{"cuda:0", 80 * GiB, true, 0});
    packing::ActorPlan a;
    a.actor.id = gpu.id;
    a.actor.device = "cuda:0";
    f.plan.actors.push_back(a);
    CHECK(f.admit(3, wide, f.t0).ask);
  }
}

TEST_CASE("held jobs go on once another shape's profile covers theirs") {
  Fixture f;
  const auto narrow = mlp_shape(128);
  const auto wide = mlp_shape(512);
  CHECK(f.admit(1, wide, f.t0).held);
  CHECK(f.admit(0, narrow, f.t0).held);
  CHECK(trials_of(f.gate.on_profiled(0, answer(narrow.key))) == std::vector<tuners::TrialId>{0, 1});
  // The wide shape's own request is still out, but nothing waits for it.
  CHECK(f.gate.asked(wide.key));
}

TEST_CASE("a wider shape waits for its narrower sibling's profile before it is asked for") {
  Fixture f;
  const auto narrow = mlp_shape(128);
  const auto wide = mlp_shape(512);
  CHECK(f.admit(0, narrow, f.t0).ask);
  auto first = f.admit(1, wide, f.t0);
  CHECK(first.held);
  CHECK_FALSE(first.ask);
  CHECK(f.gate.held_jobs() == 2);

  SECTION("no gain: both go on, and the wide shape is never profiled") {
    CHECK(trials_of(f.gate.on_profiled(0, {narrow.key, "cpu", {1, 2}, {0.010, 0.020}, ""})) ==
          std::vector<tuners::TrialId>{0, 1});
    auto later = f.admit(2, wide, f.t0);
    CHECK_FALSE(later.held);
    CHECK_FALSE(later.ask);
  }
  SECTION("a gain: both go on, and the wide shape is profiled for its own figures") {
    CHECK(trials_of(f.gate.on_profiled(0, answer(narrow.key))) == std::vector<tuners::TrialId>{0, 1});
    auto later = f.admit(2, wide, f.t0);
    CHECK_FALSE(later.held);
    CHECK(later.ask);
  }
  SECTION("the narrow profile never comes: the wide jobs are not held forever") {
    CHECK(trials_of(f.gate.expire(f.t0 + std::chrono::seconds(121))) == std::vector<tuners::TrialId>{0, 1});
    CHECK(f.gate.held_jobs() == 0);
  }
}

TEST_CASE("the requests of a dead actor time out at once") {
  Fixture f;
  const auto shape = mlp_shape(256);
  auto admission = f.admit(2, shape, f.t0);
  REQUIRE(admission.ask);
  f.registry.mark_dead(*f.registry.actor_by_id(admission.ask->actor));
  CHECK(trials_of(f.gate.expire(f.t0)) == std::vector<tuners::TrialId>{2});
  CHECK(f.gate.held_jobs() == 0);
  // The shape was never profiled: its next job asks the actor that is left, and waits.
  auto again = f.admit(4, shape, f.t0);
  CHECK(again.held);
  REQUIRE(again.ask);
  CHECK(again.ask->actor == f.plan.actors[0].actor.id);
}

TEST_CASE("without a ready actor nothing is asked and nothing waits") {
  Fixture f;
  for (auto& [identity, actor] : f.registry.actors()) f.registry.mark_dead(actor);
  auto admission = f.admit(0, mlp_shape(256), f.t0);
  CHECK_FALSE(admission.held);
  CHECK_FALSE(admission.ask);
}

TEST_CASE("where the prior fuses nothing, jobs go on while the profile is taken") {
  Fixture f;
  // A CPU prior without a fixed cost per step, as `packtune run` sets it up: a fused pair
  // costs two plain models, so the prior keeps every unit at one until a profile says more.
  packing::PlanOptions options;
  options.cpu_step_overhead_seconds = 0;
  packing::Planner planner({}, options);
  ProfileGate gate(planner, f.plan, f.registry, {true, 4, 120});
  const auto shape = mlp_shape(256);
  auto first = gate.admit(Job::start(0, {}, 1), shape, {}, {}, f.t0);
  CHECK_FALSE(first.held);
  REQUIRE(first.ask);  // the units after it are sized by the answer
  CHECK(first.ask->profile.key == shape.key);
  CHECK_FALSE(gate.admit(Job::start(1, {}, 1), shape, {}, {}, f.t0).held);
  CHECK(gate.held_jobs() == 0);
  // The same shape on a device whose prior fuses (the default overhead) waits.
  CHECK(f.admit(2, shape, f.t0).held);
}

TEST_CASE("with fuse other than auto, or one trial per actor, the gate is open") {
  Fixture f;
  ProfileGate open(f.planner, f.plan, f.registry, {false, 1, 120});
  auto admission = open.admit(Job::start(0, {}, 1), mlp_shape(256), {}, {}, f.t0);
  CHECK_FALSE(admission.held);
  CHECK_FALSE(admission.ask);
}

namespace {

// Two ready CPU actors of one context, as real actors report it, and a gate with a cache in a
// temporary folder.
struct CachedFixture {
  packtune::testing::TempDir dir;
  packing::Planner planner;
  packing::Plan plan;
  ActorRegistry registry{{60, 60, 30}};
  std::unique_ptr<ProfileGate> gate;
  Clock::time_point t0 = Clock::now();
  ProfileCache::Context context{"Test CPU, 1 thread", "LibTorch test", "images 1x28x28, 10 classes, order shared"};

  explicit CachedFixture(bool fresh = false, bool with_context = true) {
    for (int i = 0; i < 2; ++i) {
      protocol::Hello hello;
      hello.host = "h";
      hello.pid = 100 + i;
      auto& actor = registry.add_actor("a" + std::to_string(i), hello, t0);
      protocol::Ready ready{"cpu", 8 * GiB, true, 0};
      if (with_context) {
        ready.device_model = context.device_model;
        ready.build = context.build;
        ready.data_context = context.data;
      }
      registry.mark_ready(actor, ready);
      packing::ActorPlan a;
      a.actor.id = actor.id;
      a.actor.device = "cpu";
      a.estimated_seconds = i == 0 ? 10 : 1;
      plan.actors.push_back(a);
    }
    open(fresh);
  }
  void open(bool fresh) {
    ProfileGate::Options options{true, 4, 120, dir.file("cache"), fresh};
    gate = std::make_unique<ProfileGate>(planner, plan, registry, options);
  }
  ProfileGate::Admission admit(tuners::TrialId trial, const packing::TrialShape& shape) {
    return gate->admit(Job::start(trial, {}, 1), shape, {}, {}, t0);
  }
};

}  // namespace

TEST_CASE("a profile an actor measured is kept, and a later run's gate takes it instead of asking") {
  CachedFixture f;
  const auto shape = mlp_shape(256);
  auto first = f.admit(1, shape);
  REQUIRE(first.ask);
  CHECK(first.held);
  f.gate->on_profiled(first.ask->actor, answer(shape.key));
  CHECK(f.gate->measured() == 1);
  CHECK(f.gate->from_cache() == 0);

  ProfileCache kept(f.dir.file("cache"));
  REQUIRE(kept.open().empty());
  const auto entry = kept.find(f.context, shape.key, 4);
  REQUIRE(entry);
  CHECK(entry->points == packing::StepProfile{{1, 0.010}, {2, 0.015}, {4, 0.025}});
  CHECK(entry->max_members == 4);

  SECTION("the next run: nothing waits, nothing is asked, the planner has the profile") {
    f.planner = packing::Planner();  // a fresh planner, as a new run has
    f.open(false);
    CHECK_FALSE(f.planner.throughput_model().profiled("cpu", shape.key));
    auto again = f.admit(1, shape);
    CHECK_FALSE(again.held);
    CHECK_FALSE(again.ask);
    CHECK(f.planner.throughput_model().profiled("cpu", shape.key));
    CHECK(f.planner.throughput_model().profile("cpu", shape.key) == packing::StepProfile{{1, 0.010}, {2, 0.015}, {4, 0.025}});
    CHECK(f.gate->from_cache() == 1);
    CHECK(f.gate->measured() == 0);
    // Another width of the family was never measured here: it is asked for.
    CHECK(f.admit(2, mlp_shape(512)).ask);
  }
  SECTION("--fresh-profiles: measured again, and the new profile replaces the old") {
    f.planner = packing::Planner();
    f.open(true);
    auto again = f.admit(1, shape);
    REQUIRE(again.ask);
    CHECK(f.gate->from_cache() == 0);
    auto newer = answer(shape.key);
    newer.seconds = {0.020, 0.030, 0.050};
    f.gate->on_profiled(again.ask->actor, newer);
    ProfileCache replaced(f.dir.file("cache"));
    REQUIRE(replaced.open().empty());
    CHECK(replaced.entries().size() == 1);
    CHECK(replaced.find(f.context, shape.key, 4)->points.front().second == 0.020);
  }
  SECTION("a run that may pack more than the profile timed measures again") {
    f.planner = packing::Planner();
    ProfileGate::Options wider{true, 8, 120, f.dir.file("cache"), false};
    f.gate = std::make_unique<ProfileGate>(f.planner, f.plan, f.registry, wider);
    CHECK(f.admit(1, shape).ask);
    CHECK(f.gate->from_cache() == 0);
  }
}

TEST_CASE("actors that name no context are never served from the cache, nor stored in it") {
  CachedFixture f(false, false);
  const auto shape = mlp_shape(256);
  auto first = f.admit(1, shape);
  REQUIRE(first.ask);
  f.gate->on_profiled(first.ask->actor, answer(shape.key));
  CHECK(f.gate->measured() == 1);
  CHECK_FALSE(std::filesystem::exists(f.gate->cache_file()));
}

TEST_CASE("a TorchScript shape's profile is kept under its file's contents, not only its path") {
  CachedFixture f;
  const auto path = f.dir.file("net.pt");
  auto write = [&](const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; };
  write("a scripted module");
  spec::TrialSpec spec;
  spec.model.family = "torchscript";
  spec.model.params["path"] = path;
  auto shape = mlp_shape(64);
  shape.key = "torchscript/" + path + "/b128/sgd";
  auto admit = [&](tuners::TrialId trial) { return f.gate->admit(Job::start(trial, {}, 1), shape, {}, spec, f.t0); };

  auto first = admit(1);
  REQUIRE(first.ask);
  f.gate->on_profiled(first.ask->actor, answer(shape.key));
  ProfileCache kept(f.dir.file("cache"));
  REQUIRE(kept.open().empty());
  REQUIRE(kept.entries().size() == 1);
  // The path's key with the file's size and the hash of its (here: all) bytes.
  CHECK(kept.entries().front().shape.rfind(shape.key + " (17 bytes, sampled sha256 ", 0) == 0);

  SECTION("the same file in a later run: taken from the cache") {
    f.planner = packing::Planner();
    f.open(false);
    CHECK_FALSE(admit(1).ask);
    CHECK(f.gate->from_cache() == 1);
  }
  SECTION("another model saved under the same name: measured again") {
    write("another scripted module");
    f.planner = packing::Planner();
    f.open(false);
    CHECK(admit(1).ask);
    CHECK(f.gate->from_cache() == 0);
  }
}
