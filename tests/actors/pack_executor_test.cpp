#include <catch2/catch.hpp>

#include <set>
#include <stdexcept>

#include "actors/classifier.hpp"
#include "actors/pack_executor.hpp"
#include "layers/flatten.hpp"
#include "layers/linear.hpp"
#include "layers/model_registry.hpp"
#include "layers/sequential.hpp"
#include "packtune/error.hpp"
#include "spec/declared_families.hpp"
#include "spec/trial_spec.hpp"
#include "synthetic_data.hpp"
#include "test_device.hpp"

using namespace packtune;
using namespace packtune::actors;
using namespace packtune::spec;
using packtune::testing::synthetic_split;
// On $PACKTUNE_TEST_DEVICE: on a GPU the units of a mixed pack step on CUDA streams of their own.

namespace {

PackJob job(tuners::TrialId id, tuners::TrialConfig config, double budget) {
  PackJob j;
  j.trial = id;
  j.spec = parse_trial_spec(config);
  j.config = config;
  j.seed = 1000 + static_cast<std::uint64_t>(id);
  j.budget = budget;
  j.report_every = budget / 2;
  return j;
}

std::map<tuners::TrialId, std::vector<PackEvent>> run(PackExecutor& pack) {
  std::map<tuners::TrialId, std::vector<PackEvent>> events;
  while (!pack.empty()) {
    for (auto& e : pack.step_round()) events[e.trial].push_back(e);
  }
  return events;
}

const tuners::TrialConfig kAdamMlp{{"width", std::int64_t{32}}, {"depth", std::int64_t{1}},
                                   {"optimizer", std::string("adam")}, {"lr", 0.01},
                                   {"dropout", 0.2}, {"batch_size", std::int64_t{16}}};
const tuners::TrialConfig kSgdCnn{{"family", std::string("cnn")}, {"depth", std::int64_t{1}},
                                  {"channels", std::int64_t{4}}, {"width", std::int64_t{0}},
                                  {"lr", 0.05}, {"momentum", 0.9}, {"nesterov", true},
                                  {"batch_size", std::int64_t{32}}};

}  // namespace

TEST_CASE("a trial reports the same metrics alone and in a mixed pack") {
  torch::set_num_threads(1);
  auto split = synthetic_split(320, 100);
  datasets::BatchStream alone_stream(split, packtune::testing::test_device(), 7);
  PackExecutor alone(alone_stream, BudgetUnit::Epochs);
  alone.add(job(0, kAdamMlp, 2));
  auto solo = run(alone)[0];

  datasets::BatchStream pack_stream(split, packtune::testing::test_device(), 7);
  PackExecutor pack(pack_stream, BudgetUnit::Epochs);
  pack.add(job(1, kSgdCnn, 1));
  pack.step_round();  // the other member is a step ahead: joining mid-run must not matter
  pack.add(job(0, kAdamMlp, 2));
  auto packed = run(pack);

  REQUIRE(solo.size() == 2);
  REQUIRE(packed[0].size() == 2);
  for (std::size_t i = 0; i < solo.size(); ++i) {
    CHECK(packed[0][i].budget == solo[i].budget);
    CHECK(packed[0][i].metrics.at("val_loss") == Approx(solo[i].metrics.at("val_loss")).epsilon(1e-5));
    CHECK(packed[0][i].metrics.at("val_accuracy") == solo[i].metrics.at("val_accuracy"));
  }
  CHECK(packed[1].back().final);
  // The model learns something: better than chance (10%).
  CHECK(solo.back().metrics.at("val_accuracy") > 0.3);
}

TEST_CASE("members with the same batch size share each decoded batch") {
  auto split = synthetic_split(160, 20);
  datasets::BatchStream stream(split, packtune::testing::test_device(), 1);
  PackExecutor pack(stream, BudgetUnit::Steps);
  pack.add(job(0, kAdamMlp, 10));
  pack.add(job(1, kAdamMlp, 10));
  pack.add(job(2, kAdamMlp, 10));
  run(pack);
  CHECK(stream.batches_decoded() == 10);
}

TEST_CASE("reports come at each report_every and the last one is final") {
  auto split = synthetic_split(160, 20);
  datasets::BatchStream stream(split, packtune::testing::test_device(), 1);
  PackExecutor pack(stream, BudgetUnit::Epochs);
  auto j = job(0, kAdamMlp, 1.5);
  j.report_every = 0.5;
  pack.add(j);
  auto events = run(pack)[0];
  REQUIRE(events.size() == 3);
  CHECK(events[0].budget == 0.5);
  CHECK(events[1].budget == 1.0);
  CHECK(events[2].budget == 1.5);
  CHECK_FALSE(events[1].final);
  CHECK(events[2].final);
  CHECK(events[2].metrics.count("train_loss") == 1);
}

TEST_CASE("a model that does not fit the images is refused with a clear error") {
  auto split = synthetic_split(160, 20, 4);
  datasets::BatchStream stream(split, packtune::testing::test_device(), 1);
  PackExecutor pack(stream, BudgetUnit::Steps);
  pack.add(job(1, kAdamMlp, 4));
  // Three conv blocks with 2x2 pooling shrink 4x4 images to nothing.
  CHECK_THROWS_WITH(pack.add(job(0, {{"family", std::string("cnn")}, {"depth", std::int64_t{3}},
                                      {"channels", std::int64_t{2}}}, 4)),
                    Catch::Contains("shrink 4x4 images to nothing"));
  CHECK(pack.size() == 1);
  auto events = run(pack);
  CHECK(events[1].back().final);
}

TEST_CASE("jobs of one planner unit train in one fused group; a unit of one is a group of its own") {
  torch::set_num_threads(1);
  auto split = synthetic_split(160, 20);
  datasets::BatchStream stream(split, packtune::testing::test_device(), 1);
  PackExecutor pack(stream, BudgetUnit::Steps);
  auto in_unit = [](PackJob j, const std::string& unit, int max_fused = 0) {
    j.unit = unit;
    j.max_fused = max_fused;
    return j;
  };
  auto sgd_wide = kAdamMlp;
  sgd_wide["optimizer"] = std::string("sgd");
  sgd_wide["width"] = std::int64_t{64};
  pack.add(in_unit(job(0, kAdamMlp, 10), "a"));
  pack.add(in_unit(job(1, sgd_wide, 10), "a"));
  pack.add(in_unit(job(2, kAdamMlp, 10), "b"));
  auto plain = in_unit(job(3, kAdamMlp, 10), "", 1);
  plain.seed = 1002;  // trial 2's seed
  pack.add(plain);
  CHECK(pack.fused_groups() == 3);
  auto deeper = kAdamMlp;
  deeper["depth"] = std::int64_t{2};
  CHECK_THROWS_AS(pack.add(in_unit(job(4, deeper, 10), "a")), InputError);
  CHECK(pack.size() == 4);
  auto events = run(pack);
  const std::map<tuners::TrialId, int> unit_size{{0, 2}, {1, 2}, {2, 1}, {3, 1}};
  for (const auto& [trial, size] : unit_size) {
    INFO("trial " << trial);
    REQUIRE(events[trial].size() == 2);
    for (const auto& e : events[trial]) CHECK(e.unit_size == size);
  }
  // Trial 3 trained in a unit of one, trial 2 alone in its planner unit: the same trial, the
  // same numbers bit for bit.
  CHECK(events[3].back().metrics == events[2].back().metrics);
}

TEST_CASE("sole_unit: the members of the pack's one group, while it has no other and none is parked") {
  torch::set_num_threads(1);
  auto split = synthetic_split(160, 20);
  datasets::BatchStream stream(split, packtune::testing::test_device(), 1);
  PackExecutor pack(stream, BudgetUnit::Steps);
  CHECK(pack.sole_unit().empty());
  auto in_unit = [](PackJob j, const std::string& unit) {
    j.unit = unit;
    return j;
  };
  pack.add(in_unit(job(0, kAdamMlp, 10), "a"));
  pack.add(in_unit(job(1, kAdamMlp, 10), "a"));
  auto unit = pack.sole_unit();
  REQUIRE(unit.size() == 2);
  CHECK(unit.front()->model.family == "mlp");
  pack.add(in_unit(job(2, kAdamMlp, 10), "b"));
  CHECK(pack.sole_unit().empty());  // a round now steps two units
  pack.remove(2);
  CHECK(pack.sole_unit().size() == 2);
  pack.step_round();
  CHECK(pack.sole_unit().size() == 2);
}

namespace {

// Steps until nothing can step: every member finished or parked.
std::map<tuners::TrialId, std::vector<PackEvent>> run_until_parked(PackExecutor& pack) {
  std::map<tuners::TrialId, std::vector<PackEvent>> events;
  while (pack.busy()) {
    for (auto& e : pack.step_round()) events[e.trial].push_back(e);
  }
  return events;
}

PackJob unit_job(tuners::TrialId id, tuners::TrialConfig config, double budget, bool park) {
  PackJob j = job(id, std::move(config), budget);
  j.report_every = 2;
  j.unit = "u1";
  j.checkpoint = true;
  j.park = park;
  return j;
}

tuners::TrialConfig with_lr(tuners::TrialConfig config, double lr) {
  config["lr"] = lr;
  return config;
}

}  // namespace

TEST_CASE("a parked unit goes on in place, from its own rows and a donor's, with the numbers of the checkpoint's path") {
  torch::set_num_threads(1);
  auto split = synthetic_split(200, 60);
  datasets::BatchStream parked_stream(split, packtune::testing::test_device(), 5);
  datasets::BatchStream loaded_stream(split, packtune::testing::test_device(), 5);
  PackExecutor parked(parked_stream, BudgetUnit::Steps);
  PackExecutor loaded(loaded_stream, BudgetUnit::Steps);
  const std::vector<double> lrs{0.01, 0.003, 0.02};
  for (tuners::TrialId t = 0; t < 3; ++t) {
    parked.add(unit_job(t, with_lr(kAdamMlp, lrs[t]), 4, true));
    loaded.add(unit_job(t, with_lr(kAdamMlp, lrs[t]), 4, false));
  }
  run_until_parked(parked);
  std::map<tuners::TrialId, std::shared_ptr<TrialCheckpoint>> saved;
  for (auto& [t, events] : run_until_parked(loaded)) saved[t] = events.back().checkpoint;
  REQUIRE(saved.size() == 3);
  for (tuners::TrialId t = 0; t < 3; ++t) {
    CHECK(parked.parked(t));
    CHECK_FALSE(loaded.contains(t));
  }
  CHECK_FALSE(parked.busy());  // a parked unit does not step

  // The next generation: trial 0 takes trial 2's weights with a smaller lr (exploits come
  // first), then 1 and 2 go on from their own.
  const auto next = [&](tuners::TrialId t, tuners::TrialConfig config) { return unit_job(t, std::move(config), 8, false); };
  const auto exploit = next(0, with_lr(kAdamMlp, 0.005));
  REQUIRE(parked.continue_parked(exploit, 2, 4));
  CHECK_FALSE(parked.busy());  // 1 and 2 are still parked: the unit waits for their jobs
  REQUIRE(parked.continue_parked(next(1, with_lr(kAdamMlp, lrs[1])), -1, 4));
  REQUIRE(parked.continue_parked(next(2, with_lr(kAdamMlp, lrs[2])), -1, 4));
  CHECK(parked.busy());

  auto copy = std::make_shared<TrialCheckpoint>(*saved[2]);  // what the driver's copy holds
  copy->trial = 0;
  copy->seed = exploit.seed;
  copy->config = tuners::to_json(exploit.config);
  for (tuners::TrialId t = 0; t < 3; ++t) {
    auto j = t == 0 ? exploit : next(t, with_lr(kAdamMlp, lrs[t]));
    j.resume = t == 0 ? copy : saved[t];
    loaded.add(j);
  }
  auto in_place = run_until_parked(parked), from_files = run_until_parked(loaded);
  for (tuners::TrialId t = 0; t < 3; ++t) {
    INFO("trial " << t);
    REQUIRE(in_place[t].size() == 2);
    REQUIRE(from_files[t].size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
      CHECK(in_place[t][i].budget == from_files[t][i].budget);
      CHECK(in_place[t][i].metrics == from_files[t][i].metrics);
    }
    CHECK(in_place[t].back().checkpoint->metrics == from_files[t].back().checkpoint->metrics);
  }
  CHECK(in_place[0][0].unit_size == 3);
}

TEST_CASE("parked members leave when they cannot go on in place or a member trains on beside them") {
  torch::set_num_threads(1);
  auto split = synthetic_split(200, 60);
  datasets::BatchStream stream(split, packtune::testing::test_device(), 5);
  PackExecutor pack(stream, BudgetUnit::Steps);
  pack.add(unit_job(0, kAdamMlp, 4, true));
  pack.add(unit_job(1, kAdamMlp, 4, true));
  pack.add(unit_job(2, kAdamMlp, 4, true));
  run_until_parked(pack);
  REQUIRE(pack.parked(0));
  CHECK(pack.sole_unit().empty());  // no round of the pack would step it

  SECTION("another budget, config or unit, or a donor that is not parked here, sends the member out") {
    CHECK_FALSE(pack.continue_parked(unit_job(0, kAdamMlp, 8, false), -1, 2));  // its checkpoint at 2
    CHECK_FALSE(pack.contains(0));
    CHECK_FALSE(pack.continue_parked(unit_job(1, with_lr(kAdamMlp, 0.5), 8, false), -1, 4));
    auto other_unit = unit_job(2, kAdamMlp, 8, false);
    other_unit.unit = "u2";
    CHECK_FALSE(pack.continue_parked(other_unit, -1, 4));
    CHECK(pack.empty());
  }
  SECTION("a donor that went on but has not stepped since gives its rows; one not parked here gives none") {
    REQUIRE(pack.continue_parked(unit_job(1, kAdamMlp, 8, true), -1, 4));
    CHECK_FALSE(pack.busy());  // 1 waits for 0 and 2
    REQUIRE(pack.continue_parked(unit_job(0, kAdamMlp, 8, false), 1, 4));
    CHECK_FALSE(pack.continue_parked(unit_job(2, kAdamMlp, 8, false), 9, 4));
    CHECK_FALSE(pack.contains(2));
    CHECK(pack.busy());
  }
  SECTION("when a dispatch has arrived, a parked member of a group it gave jobs to, none its own, leaves") {
    REQUIRE(pack.continue_parked(unit_job(0, kAdamMlp, 8, false), -1, 4));
    auto other = unit_job(1, kAdamMlp, 8, false);
    other.unit = "u2";  // another group: its parked members stay
    pack.end_batch({pack.group_of(unit_job(0, kAdamMlp, 8, false)), pack.group_of(other)});
    CHECK_FALSE(pack.contains(1));  // parked in u1, which got 0's job
    CHECK_FALSE(pack.contains(2));
    CHECK(pack.busy());
  }
  SECTION("a newcomer waits with the unit; a member that trained on sends the parked out") {
    pack.add(unit_job(3, kAdamMlp, 4, false));
    CHECK_FALSE(pack.busy());
    pack.remove(1);
    pack.remove(2);
    CHECK_FALSE(pack.busy());
    REQUIRE(pack.continue_parked(unit_job(0, kAdamMlp, 8, false), -1, 4));
    CHECK(pack.busy());
    pack.step_round();  // 0 and 3 train on together
    pack.add(unit_job(4, kAdamMlp, 2, true));
    run_until_parked(pack);  // 4 parks while 0 and 3 train on: it leaves, and they finish
    CHECK(pack.empty());
  }
}

namespace {

// Registers a model family whose builder is `build`, once per process, as a model plugin
// would (without a library, so its failures name the family alone).
void register_family(const std::string& name, layers::ModelBuilder build) {
  if (layers::ModelRegistry::instance().find(name)) return;
  layers::FamilyDeclaration declaration{name, {}};
  layers::ModelRegistry::instance().add({declaration, std::move(build)});
  DeclaredFamilies::instance().add(declaration);
}

std::shared_ptr<layers::Layer> linear_model(const layers::ModelInput& input, std::int64_t extra_outputs) {
  auto model = std::make_shared<layers::Sequential>();
  model->emplace<layers::Flatten>();
  model->emplace<layers::Linear>(input.channels * input.height * input.width, input.outputs + extra_outputs);
  return model;
}

}  // namespace

TEST_CASE("a model plugin's builder that fails fails its trial alone, however it fails") {
  register_family("returns_null", [](const tuners::TrialConfig&, const layers::ModelInput&) {
    return std::shared_ptr<layers::Layer>();
  });
  register_family("throws_int", [](const tuners::TrialConfig&, const layers::ModelInput&) -> std::shared_ptr<layers::Layer> {
    throw 42;
  });
  register_family("throws_std", [](const tuners::TrialConfig&, const layers::ModelInput&) -> std::shared_ptr<layers::Layer> {
    throw std::runtime_error("the builder gave up");
  });
  register_family("wrong_outputs", [](const tuners::TrialConfig&, const layers::ModelInput& input) {
    return linear_model(input, 3);
  });
  register_family("right_outputs", [](const tuners::TrialConfig&, const layers::ModelInput& input) {
    return linear_model(input, 0);
  });
  auto split = synthetic_split(160, 20, 8);
  datasets::BatchStream stream(split, packtune::testing::test_device(), 1);
  PackExecutor pack(stream, BudgetUnit::Steps);
  pack.add(job(1, kAdamMlp, 4));
  const auto plugin = [](const std::string& family) {
    return tuners::TrialConfig{{"family", family}, {"batch_size", std::int64_t{16}}};
  };
  for (const auto& [family, why] : std::vector<std::pair<std::string, std::string>>{
           {"returns_null", "its builder returned no model (a null pointer)"},
           {"throws_int", "its builder threw something that is not a std::exception"},
           {"throws_std", "its builder failed: the builder gave up"},
           {"wrong_outputs", "its model's output for one example of shape [1, 1, 1, 8, 8] is [1, 1, 13], but the data "
                             "needs [1, 1, 10] (10 outputs per example)"}}) {
    INFO(family);
    CHECK_THROWS_WITH(pack.add(job(2, plugin(family), 4)), "model family \"" + family + "\": " + why);
    CHECK(pack.size() == 1);
  }
  // A plugin family that builds what the data needs trains beside the first trial.
  pack.add(job(3, plugin("right_outputs"), 4));
  auto events = run(pack);
  REQUIRE_FALSE(events[1].empty());
  CHECK(events[1].back().final);
  CHECK(events[1].back().error.empty());
  REQUIRE_FALSE(events[3].empty());
  CHECK(events[3].back().final);
  CHECK(events[3].back().error.empty());
}

namespace {

// Four trials of one shape with unlike recipes: every schedule, label smoothing on some,
// clipping on some (clip_norm 0.5 binds on this data's first steps).
std::vector<tuners::TrialConfig> recipe_trials() {
  std::vector<tuners::TrialConfig> out;
  const std::vector<tuners::TrialConfig> recipes = {
      {{"lr_schedule", std::string("cosine")}, {"lr_warmup", 0.5}, {"label_smoothing", 0.1}},
      {{"lr_schedule", std::string("step")}, {"lr_step_every", 0.5}, {"lr_step_factor", 0.5}, {"grad_clip_norm", 0.5}},
      {{"lr_schedule", std::string("linear")}, {"label_smoothing", 0.2}, {"grad_clip_norm", 2.0}},
      {{"lr_schedule", std::string("one_cycle")}}};
  for (const auto& recipe : recipes) {
    auto config = kAdamMlp;
    config["dropout"] = 0.0;
    for (const auto& [k, v] : recipe) config[k] = v;
    out.push_back(config);
  }
  return out;
}

// Trials `ids` of recipe_trials trained in one pack to `budget` over a schedule of 2 epochs,
// from `resume` where given; their events by trial.
std::map<tuners::TrialId, std::vector<PackEvent>> train_recipes(
    const std::vector<tuners::TrialId>& ids, double budget,
    const std::map<tuners::TrialId, std::shared_ptr<TrialCheckpoint>>& resume = {}) {
  auto split = synthetic_split(320, 100);
  datasets::BatchStream stream(split, torch::kCPU, 7);
  PackExecutor pack(stream, BudgetUnit::Epochs);
  const auto configs = recipe_trials();
  for (const auto id : ids) {
    auto j = job(id, configs[static_cast<std::size_t>(id)], budget);
    j.report_every = 0.5;
    j.max_budget = 2;
    j.checkpoint = true;
    if (auto it = resume.find(id); it != resume.end()) j.resume = it->second;
    pack.add(j);
  }
  return run(pack);
}

}  // namespace

// A schedule runs over budget.max: a trial stopped at a rung and promoted goes on along the
// curve of one trained to the end, and its step count (in the checkpoint) says where.
TEST_CASE("under every schedule a promoted trial reports as an uninterrupted one, and fused as alone, bit for bit") {
  torch::set_num_threads(1);
  const std::vector<tuners::TrialId> all = {0, 1, 2, 3};
  const auto whole = train_recipes(all, 2);
  const auto rung = train_recipes(all, 1);
  std::map<tuners::TrialId, std::shared_ptr<TrialCheckpoint>> checkpoints;
  for (const auto id : all) {
    REQUIRE(rung.at(id).back().checkpoint);
    checkpoints[id] = rung.at(id).back().checkpoint;
  }
  const auto promoted = train_recipes(all, 2, checkpoints);
  std::set<double> losses;
  for (const auto id : all) {
    const auto alone = train_recipes({id}, 2).at(id);
    const auto& w = whole.at(id);
    const auto& p = promoted.at(id);
    REQUIRE(w.size() == 4);
    REQUIRE(p.size() == 2);
    for (std::size_t i = 0; i < w.size(); ++i) {
      INFO("trial " << id << " at budget " << w[i].budget);
      CHECK(alone[i].metrics == w[i].metrics);
      if (i >= 2) CHECK(p[i - 2].metrics == w[i].metrics);
      if (i < 2) CHECK(rung.at(id)[i].metrics == w[i].metrics);
    }
    losses.insert(w.back().metrics.at("val_loss"));
  }
  CHECK(losses.size() == 4);  // the recipes differ: four trials, four curves
}
