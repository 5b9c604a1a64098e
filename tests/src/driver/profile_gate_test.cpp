#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <memory>

#include "../../temp_dir.hpp"
#include "driver/profile_gate.hpp"
#include "mlp_shape.hpp"

using namespace packtune;
using Clock = ProfileGate::Clock;

namespace {

using packtune::testing::mlp_shape;

constexpr std::int64_t GiB = std::int64_t{1} << 30;

// Two ready actors in the registry and the plan, their memory unknown to it (no cap).
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

  // A job of `shape` went to the plan's actor `index`: the Profile it is asked for, if any.
  std::optional<protocol::Profile> place(std::size_t index, const packing::TrialShape& shape, Clock::time_point now) {
    gate.prepare(shape, {});
    return gate.placed(plan.actors[index].actor.id, shape, {}, {}, now);
  }
};

protocol::Profiled answer(const std::string& key) {
  return {key, "cpu", {1, 2, 4}, {0.010, 0.015, 0.025}, ""};
}

}  // namespace

TEST_CASE("the actor an unprofiled shape's first job goes to profiles it while it trains; no job waits") {
  Fixture f;
  const auto shape = mlp_shape(256);
  auto first = f.place(0, shape, f.t0);
  REQUIRE(first);
  CHECK(first->key == shape.key);
  CHECK(first->max_members == 4);
  CHECK(f.gate.asked(shape.key));
  // The shape is asked for once; its later jobs go on, on any actor.
  CHECK_FALSE(f.place(1, shape, f.t0));
  CHECK_FALSE(f.place(0, shape, f.t0));
  f.gate.expire(f.t0 + std::chrono::seconds(60));
  CHECK(f.gate.asked(shape.key));

  SECTION("the answer is filed in the planner, and nothing is asked again") {
    f.gate.on_profiled(f.plan.actors[0].actor.id, answer(shape.key));
    CHECK_FALSE(f.gate.asked(shape.key));
    CHECK(f.planner.throughput_model().profiled("cpu", shape.key));
    CHECK(f.gate.measured() == 1);
    CHECK_FALSE(f.place(1, shape, f.t0));
  }
  SECTION("an answer with an error leaves the shape to the prior, and it is not asked again") {
    auto failed = answer(shape.key);
    failed.error = "out of memory";
    f.gate.on_profiled(0, failed);
    CHECK_FALSE(f.planner.throughput_model().covered("", shape));
    CHECK(f.gate.measured() == 0);
    // The actor would fail the same way for ever (an actor_memory too small for the profile).
    CHECK_FALSE(f.place(1, shape, f.t0));
  }
  SECTION("an answer nobody asked for changes nothing") {
    f.gate.on_profiled(0, answer("cnn-16"));
    CHECK(f.gate.asked(shape.key));
    CHECK(f.gate.measured() == 0);
    CHECK_FALSE(f.planner.throughput_model().profiled("cpu", "cnn-16"));
  }
  SECTION("a request older than the timeout is given up, and not asked again") {
    f.gate.expire(f.t0 + std::chrono::seconds(121));
    CHECK_FALSE(f.gate.asked(shape.key));
    // The live actor that let it time out would hang as long again.
    CHECK_FALSE(f.place(1, shape, f.t0 + std::chrono::seconds(122)));
  }
}

TEST_CASE("a second shape of a profiled architecture is profiled for its own figures") {
  Fixture f;
  const auto narrow = mlp_shape(128);
  const auto wide = mlp_shape(512);
  REQUIRE(f.place(0, narrow, f.t0));
  f.gate.on_profiled(0, answer(narrow.key));
  auto ask = f.place(1, wide, f.t0);
  REQUIRE(ask);
  CHECK(ask->key == wide.key);
}

TEST_CASE("a wider shape is not profiled where a narrower one of its family gained nothing from fusing") {
  Fixture f;
  const auto narrow = mlp_shape(128);
  const auto wide = mlp_shape(512);
  REQUIRE(f.place(0, narrow, f.t0));
  // Two members take twice one's time, as on a CPU that one member already keeps busy.
  f.gate.on_profiled(0, {narrow.key, "cpu", {1, 2}, {0.010, 0.020}, ""});
  CHECK_FALSE(f.place(1, wide, f.t0));
  CHECK_FALSE(f.gate.asked(wide.key));

  SECTION("a narrower shape is still profiled: it may gain where a wider one does not") {
    CHECK(f.place(1, mlp_shape(64), f.t0));
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
    CHECK(f.place(2, wide, f.t0));
  }
}

TEST_CASE("a wider shape is asked for only once its narrower sibling's answer is in") {
  Fixture f;
  const auto narrow = mlp_shape(128);
  const auto wide = mlp_shape(512);
  REQUIRE(f.place(0, narrow, f.t0));
  CHECK_FALSE(f.place(1, wide, f.t0));
  CHECK_FALSE(f.gate.asked(wide.key));

  SECTION("no gain: the wide shape is never profiled") {
    f.gate.on_profiled(0, {narrow.key, "cpu", {1, 2}, {0.010, 0.020}, ""});
    CHECK_FALSE(f.place(1, wide, f.t0));
  }
  SECTION("a gain: the wide shape's next job asks for its own figures") {
    f.gate.on_profiled(0, answer(narrow.key));
    CHECK(f.place(1, wide, f.t0));
  }
  SECTION("the narrow profile never comes: the wide shape is asked for after all") {
    f.gate.expire(f.t0 + std::chrono::seconds(121));
    CHECK(f.place(1, wide, f.t0 + std::chrono::seconds(121)));
  }
}

TEST_CASE("a dead actor's request is given up at once, and the next actor the shape goes to is asked") {
  Fixture f;
  const auto shape = mlp_shape(256);
  REQUIRE(f.place(1, shape, f.t0));
  f.registry.mark_dead(*f.registry.actor_by_id(f.plan.actors[1].actor.id));
  f.gate.expire(f.t0);
  CHECK_FALSE(f.gate.asked(shape.key));
  CHECK(f.place(0, shape, f.t0));
}

TEST_CASE("the profile asked for fits the actor's memory beside its pack") {
  Fixture f;
  const auto shape = mlp_shape(256);
  const auto& model = f.planner.memory_model();
  const auto one = model.estimate(shape, 1).peak(), two = model.estimate(shape, 2).peak();
  const auto four = model.estimate(shape, 4).peak();
  auto& actor = f.plan.actors[0];
  actor.estimated_bytes = 100 * one;  // its pack as planned
  SECTION("room for a unit of 2 and one of 1 together, not for 4 and 2: up to 2") {
    REQUIRE(four + two > two + one + one / 2);
    actor.actor.capacity_bytes = actor.estimated_bytes + two + one + one / 2;
    auto ask = f.place(0, shape, f.t0);
    REQUIRE(ask);
    CHECK(ask->max_members == 2);
  }
  SECTION("no room for one member: nothing is asked now, and the next actor the shape goes to is") {
    actor.actor.capacity_bytes = actor.estimated_bytes + one / 2;
    CHECK_FALSE(f.place(0, shape, f.t0));
    CHECK_FALSE(f.gate.asked(shape.key));
    auto ask = f.place(1, shape, f.t0);
    REQUIRE(ask);
    CHECK(ask->max_members == 4);  // its memory is unknown to the plan
  }
}

TEST_CASE("a job placed on an actor that is not ready asks nothing") {
  Fixture f;
  for (auto& [identity, actor] : f.registry.actors()) f.registry.mark_dead(actor);
  CHECK_FALSE(f.place(0, mlp_shape(256), f.t0));
}

TEST_CASE("a closed gate (fuse other than auto, or one trial per actor) asks nothing") {
  Fixture f;
  ProfileGate open(f.planner, f.plan, f.registry, {false, 1, 120});
  CHECK_FALSE(open.placed(f.plan.actors[0].actor.id, mlp_shape(256), {}, {}, f.t0));
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
  std::optional<protocol::Profile> place(std::size_t index, const packing::TrialShape& shape) {
    gate->prepare(shape, {});
    return gate->placed(plan.actors[index].actor.id, shape, {}, {}, t0);
  }
};

}  // namespace

TEST_CASE("a profile an actor measured is kept, and a later run's gate takes it instead of asking") {
  CachedFixture f;
  const auto shape = mlp_shape(256);
  REQUIRE(f.place(1, shape));
  f.gate->on_profiled(f.plan.actors[1].actor.id, answer(shape.key));
  CHECK(f.gate->measured() == 1);
  CHECK(f.gate->from_cache() == 0);

  ProfileCache kept(f.dir.file("cache"));
  REQUIRE(kept.open().empty());
  const auto entry = kept.find(f.context, shape.key, 4);
  REQUIRE(entry);
  CHECK(entry->points == packing::StepProfile{{1, 0.010}, {2, 0.015}, {4, 0.025}});
  CHECK(entry->max_members == 4);

  SECTION("the next run: nothing is asked, the planner has the profile before the job is placed") {
    f.planner = packing::Planner();  // a fresh planner, as a new run has
    f.open(false);
    CHECK_FALSE(f.planner.throughput_model().profiled("cpu", shape.key));
    f.gate->prepare(shape, {});
    CHECK(f.planner.throughput_model().profiled("cpu", shape.key));
    CHECK_FALSE(f.place(1, shape));
    CHECK(f.planner.throughput_model().profiled("cpu", shape.key));
    CHECK(f.planner.throughput_model().profile("cpu", shape.key) == packing::StepProfile{{1, 0.010}, {2, 0.015}, {4, 0.025}});
    CHECK(f.gate->from_cache() == 1);
    CHECK(f.gate->measured() == 0);
    // Another width of the family was never measured here: it is asked for.
    CHECK(f.place(0, mlp_shape(512)));
  }
  SECTION("--fresh-profiles: measured again, and the new profile replaces the old") {
    f.planner = packing::Planner();
    f.open(true);
    REQUIRE(f.place(1, shape));
    CHECK(f.gate->from_cache() == 0);
    auto newer = answer(shape.key);
    newer.seconds = {0.020, 0.030, 0.050};
    f.gate->on_profiled(f.plan.actors[1].actor.id, newer);
    ProfileCache replaced(f.dir.file("cache"));
    REQUIRE(replaced.open().empty());
    CHECK(replaced.entries().size() == 1);
    CHECK(replaced.find(f.context, shape.key, 4)->points.front().second == 0.020);
  }
  SECTION("a run that may pack more than the profile timed measures again") {
    f.planner = packing::Planner();
    ProfileGate::Options wider{true, 8, 120, f.dir.file("cache"), false};
    f.gate = std::make_unique<ProfileGate>(f.planner, f.plan, f.registry, wider);
    CHECK(f.place(1, shape));
    CHECK(f.gate->from_cache() == 0);
  }
}

TEST_CASE("actors that name no context are never served from the cache, nor stored in it") {
  CachedFixture f(false, false);
  const auto shape = mlp_shape(256);
  REQUIRE(f.place(1, shape));
  f.gate->on_profiled(f.plan.actors[1].actor.id, answer(shape.key));
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
  auto place = [&] {
    f.gate->prepare(shape, spec);
    return f.gate->placed(f.plan.actors[1].actor.id, shape, {}, spec, f.t0);
  };

  REQUIRE(place());
  f.gate->on_profiled(f.plan.actors[1].actor.id, answer(shape.key));
  ProfileCache kept(f.dir.file("cache"));
  REQUIRE(kept.open().empty());
  REQUIRE(kept.entries().size() == 1);
  // The path's key with the file's size and the hash of its (here: all) bytes.
  CHECK(kept.entries().front().shape.rfind(shape.key + " (17 bytes, sampled sha256 ", 0) == 0);

  SECTION("the same file in a later run: taken from the cache") {
    f.planner = packing::Planner();
    f.open(false);
    CHECK_FALSE(place());
    CHECK(f.gate->from_cache() == 1);
  }
  SECTION("another model saved under the same name: measured again") {
    write("another scripted module");
    f.planner = packing::Planner();
    f.open(false);
    CHECK(place());
    CHECK(f.gate->from_cache() == 0);
  }
}

TEST_CASE("a profile that ended where memory did is kept as timed that far: a run with more room measures again") {
  CachedFixture f;
  const auto shape = mlp_shape(256);
  REQUIRE(f.place(1, shape));
  auto answered = answer(shape.key);  // 1, 2 and 4 members
  answered.members = {1, 2};
  answered.seconds = {0.010, 0.015};
  answered.cut_short = true;  // 4 did not fit
  f.gate->on_profiled(f.plan.actors[1].actor.id, answered);
  CHECK(f.planner.throughput_model().profiled("cpu", shape.key));
  ProfileCache kept(f.dir.file("cache"));
  REQUIRE(kept.open().empty());
  REQUIRE(kept.entries().size() == 1);
  CHECK(kept.entries().front().max_members == 2);
  // The next run, with max_pack 4, is not served from it.
  f.planner = packing::Planner();
  f.open(false);
  CHECK(f.place(1, shape));
  CHECK(f.gate->from_cache() == 0);
}
