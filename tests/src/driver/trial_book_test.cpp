#include <catch2/catch.hpp>

#include <cmath>

#include "driver/trial_book.hpp"
#include "packtune/error.hpp"

using namespace packtune;
using tuners::Job;

namespace {

// A shape named by the config's width; a config without one is no model.
TrialBook::Described shape_of(const tuners::TrialConfig& full) {
  auto width = full.find("width");
  if (width == full.end()) throw InputError("trial: no width");
  packing::TrialShape s;
  s.key = "mlp-" + tuners::to_string(width->second);
  return {{}, s};
}

TrialBook book(TrialBook::Limits limits = TrialBook::Limits{2, 3}) {
  return TrialBook({{"family", tuners::ParamValue{std::string("mlp")}}}, 7, shape_of, limits);
}

tuners::TrialConfig sample(std::int64_t width) { return {{"width", tuners::ParamValue{width}}}; }

// Queues a Start job for `trial` and starts it on `actor`.
TrialState& start(TrialBook& b, tuners::TrialId trial, int actor, double budget = 1) {
  b.enqueue(Job::start(trial, sample(64), budget));
  auto opened = b.open_next();
  REQUIRE(opened.trial);
  b.start_next(actor);
  return *opened.trial;
}

}  // namespace

TEST_CASE("a trial is the fixed model overlaid with its sample, with a seed of its own") {
  auto b = book();
  b.enqueue(Job::start(0, sample(64), 1));
  b.enqueue(Job::start(1, sample(128), 1));
  auto first = b.open_next();
  REQUIRE(first.trial);
  CHECK(first.trial->full->count("family"));
  CHECK(first.trial->shape.key == "mlp-64");
  CHECK(b.start_next(3).trial == 0);
  auto second = b.open_next();
  REQUIRE(second.trial);
  CHECK(second.trial->seed != first.trial->seed);
  CHECK(b.at(0).actor == 3);
  CHECK(b.running() == 1);
  CHECK(b.queued() == 1);
  // The seed follows from the experiment's seed and the trial alone.
  auto again = book();
  again.enqueue(Job::start(0, sample(256), 1));
  CHECK(again.open_next().trial->seed == first.trial->seed);
}

TEST_CASE("a trial whose config is no model fails and its job leaves the queue") {
  auto b = book();
  b.enqueue(Job::start(4, {}, 1));
  auto opened = b.open_next();
  CHECK_FALSE(opened.trial);
  REQUIRE(opened.failure);
  CHECK(opened.failure->trial == 4);
  CHECK(b.queue_empty());
  CHECK(b.failed_trials() == 1);
  CHECK(b.completed_jobs() == 1);
}

TEST_CASE("a trial that lost its actor goes first in the queue, from its checkpoint if it has one") {
  auto b = book();
  start(b, 0, 1);
  start(b, 1, 1, 2);
  b.enqueue(Job::start(2, sample(64), 1));
  CHECK_FALSE(b.lost_actor(0, std::nullopt));
  CHECK(b.next().trial == 0);
  CHECK(b.next().kind == Job::Kind::Start);
  CHECK_FALSE(b.lost_actor(1, 0.5));
  CHECK(b.next().trial == 1);
  CHECK(b.next().kind == Job::Kind::Resume);
  CHECK(b.next().budget == 2);  // the budget its job had, not the checkpoint's
  CHECK(b.running() == 0);
  CHECK(b.queued() == 3);
}

TEST_CASE("a trial fails after too many restarts or out-of-memory errors") {
  auto b = book({2, 3});
  SECTION("restarts") {
    auto& trial = start(b, 0, 1);
    trial.reached = 0.25;
    for (int i = 0; i < 2; ++i) {
      CHECK_FALSE(b.lost_actor(0, std::nullopt));
      b.open_next();
      b.start_next(1);
    }
    auto failure = b.lost_actor(0, std::nullopt);
    REQUIRE(failure);
    CHECK(failure->trial == 0);
    CHECK(b.queue_empty());
  }
  SECTION("out of memory") {
    start(b, 0, 1);
    for (int i = 0; i < 3; ++i) {
      CHECK_FALSE(b.out_of_memory(0, std::nullopt));
      b.open_next();
      b.start_next(1);
    }
    REQUIRE(b.out_of_memory(0, std::nullopt));
    CHECK(b.queue_empty());
  }
  CHECK(b.failed_trials() == 1);
  CHECK(b.completed_jobs() == 1);
  CHECK(b.running() == 0);
}

TEST_CASE("reports count only from the actor a trial runs on; a finished job counts once") {
  auto b = book();
  start(b, 0, 2);
  start(b, 1, 2);
  CHECK(b.running_on(0, 2));
  CHECK_FALSE(b.running_on(0, 5));  // moved: a report from its old actor is stale
  CHECK_FALSE(b.running_on(9, 2));
  auto& trial = b.finish(0);
  trial.last_metric = 0.5;
  CHECK_FALSE(b.running_on(0, 2));
  CHECK(std::isnan(b.finish(1, true).last_metric));
  CHECK(b.failed_trials() == 1);
  CHECK(b.completed_jobs() == 2);
  CHECK(b.running() == 0);
}

TEST_CASE("an exploited trial takes its donor's config: its full config and shape follow") {
  auto b = book();
  start(b, 0, 1);
  std::string why;
  REQUIRE(b.retarget(0, sample(128), why));
  CHECK(b.at(0).shape.key == "mlp-128");
  CHECK(b.at(0).full->at("width") == tuners::ParamValue{std::int64_t{128}});
  CHECK(b.at(0).full->count("family"));  // the fixed model stays under it
  const auto seed = b.at(0).seed;
  CHECK_FALSE(b.retarget(0, {}, why));  // no width: no model
  CHECK_THAT(why, Catch::Contains("no width"));
  CHECK(b.at(0).seed == seed);  // the trial's own seed: dropout masks stay its own
}

TEST_CASE("the queued jobs of chosen trials go first, in their order") {
  auto b = book();
  for (tuners::TrialId t : {5, 1, 7, 3}) b.enqueue(Job::start(t, sample(64), 1));
  CHECK(b.move_to_front({7, 3}));
  std::vector<tuners::TrialId> order;
  for (const auto& job : b.queue()) order.push_back(job.trial);
  CHECK(order == std::vector<tuners::TrialId>{7, 3, 5, 1});
  CHECK_FALSE(b.move_to_front({7}));  // already first
  CHECK_FALSE(b.move_to_front({9}));  // not queued
}
