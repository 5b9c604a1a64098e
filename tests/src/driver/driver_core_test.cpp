// The driver core's handling of what peers say (driver_core.cpp): a whole sweep, a resume
// from the journal, and the messages it refuses (docs/security.md, After registration).
#include "fake_fleet.hpp"

using namespace packtune;
using namespace packtune::testing;

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
