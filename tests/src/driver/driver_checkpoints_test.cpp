// The driver core's checkpoints (driver_checkpoints.cpp, docs/checkpoints.md): what a resume
// adopts, which files a peer may offer or fetch, and what the tester may fetch.
#include "fake_fleet.hpp"

using namespace packtune;
using namespace packtune::testing;

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
