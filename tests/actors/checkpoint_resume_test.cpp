// A trial paused at one budget and resumed from its HDF5 checkpoint to a larger one ends
// exactly where it would have without the pause: alone, in a fused pack, or in a mixed pack.
#include <catch2/catch.hpp>

#include "../temp_dir.hpp"
#include "actors/checkpoint_file.hpp"
#include "actors/checkpoint_tensors.hpp"
#include "actors/pack_executor.hpp"
#include "layers/linear.hpp"
#include "layers/sequential.hpp"
#include "layers/transformer_encoder_layer.hpp"
#include "packtune/error.hpp"
#include "spec/checkpoint_name.hpp"
#include "synthetic_data.hpp"

using namespace packtune;
using namespace packtune::actors;
using namespace packtune::spec;
using packtune::testing::synthetic_split;
using packtune::testing::TempDir;

namespace {

using Events = std::map<tuners::TrialId, std::vector<PackEvent>>;

tuners::TrialConfig with(tuners::TrialConfig c, const tuners::TrialConfig& extra) {
  for (const auto& [k, v] : extra) c[k] = v;
  return c;
}

const tuners::TrialConfig kMlp{{"width", std::int64_t{24}}, {"depth", std::int64_t{2}},
                               {"batch_size", std::int64_t{16}}, {"dropout", 0.2}};
const tuners::TrialConfig kCnn{{"family", std::string("cnn")}, {"depth", std::int64_t{1}},
                               {"channels", std::int64_t{3}}, {"width", std::int64_t{12}},
                               {"batch_size", std::int64_t{16}}, {"dropout", 0.1}};

struct Case {
  const char* name;
  tuners::TrialConfig config;
  tuners::TrialConfig other;  // a companion of another architecture, for mixed packs
};

std::vector<Case> cases() {
  return {
      {"MLP with dropout, Adam", with(kMlp, {{"optimizer", std::string("adam")}, {"lr", 0.01}}),
       with(kCnn, {{"optimizer", std::string("sgd")}, {"lr", 0.05}})},
      {"CNN with batch norm and dropout, SGD with Nesterov momentum",
       with(kCnn, {{"optimizer", std::string("sgd")}, {"lr", 0.05}, {"momentum", 0.9}, {"nesterov", true},
                   {"weight_decay", 1e-3}}),
       with(kMlp, {{"optimizer", std::string("adam")}, {"lr", 0.003}})},
      {"MLP, AdamW with weight decay",
       with(kMlp, {{"optimizer", std::string("adamw")}, {"lr", 0.003}, {"weight_decay", 0.01}}),
       with(kMlp, {{"optimizer", std::string("sgd")}, {"lr", 0.1}, {"momentum", 0.5}})},
  };
}

PackJob job(tuners::TrialId id, const tuners::TrialConfig& config, double budget,
            std::shared_ptr<const TrialCheckpoint> resume = nullptr) {
  PackJob j;
  j.trial = id;
  j.config = config;
  j.spec = parse_trial_spec(config);
  j.seed = 500 + static_cast<std::uint64_t>(id);
  j.budget = budget;
  j.report_every = 0.5;
  j.resume = std::move(resume);
  j.checkpoint = true;
  return j;
}

// A companion of the same architecture with other hyper-parameters: it fuses with the trial.
tuners::TrialConfig sibling(const tuners::TrialConfig& config) {
  auto c = config;
  c["lr"] = tuners::as_number(config.at("lr"), "lr") * 0.5;
  return c;
}

Events run(PackExecutor& pack) {
  Events events;
  while (!pack.empty()) {
    for (auto& e : pack.step_round()) {
      INFO("trial " << e.trial << ": " << e.error << e.checkpoint_error);
      REQUIRE(e.error.empty());
      REQUIRE(e.checkpoint_error.empty());
      events[e.trial].push_back(std::move(e));
    }
  }
  return events;
}

// Through a real file, as between two actors.
std::shared_ptr<const TrialCheckpoint> through_file(const TrialCheckpoint& c, const TempDir& dir) {
  const auto path = checkpoint_path(dir.path().string(), c.trial, c.budget);
  write_checkpoint(path, c);
  return std::make_shared<const TrialCheckpoint>(read_checkpoint(path));
}

double relative_difference(const StoredTensor& a, const StoredTensor& b) {
  auto x = to_tensor(a, torch::kCPU).to(torch::kFloat64);
  auto y = to_tensor(b, torch::kCPU).to(torch::kFloat64);
  const double scale = std::max(1e-3, y.abs().max().item<double>());
  return (x - y).abs().max().item<double>() / scale;
}

// Same tensors, optimizer state, step and metrics, to 1e-4.
void check_same(const std::vector<PackEvent>& resumed, const std::vector<PackEvent>& reference) {
  REQUIRE(resumed.size() == reference.size());
  for (std::size_t i = 0; i < resumed.size(); ++i) {
    INFO("report at budget " << reference[i].budget);
    CHECK(resumed[i].budget == reference[i].budget);
    CHECK(resumed[i].final == reference[i].final);
    for (const auto& [name, value] : reference[i].metrics) {
      INFO(name);
      REQUIRE(resumed[i].metrics.count(name) == 1);
      CHECK(resumed[i].metrics.at(name) == Approx(value).epsilon(1e-4).margin(1e-4));
    }
  }
  const auto& a = *resumed.back().checkpoint;
  const auto& b = *reference.back().checkpoint;
  CHECK(a.step == b.step);
  CHECK(a.optimizer_steps == b.optimizer_steps);
  CHECK(a.budget == b.budget);
  REQUIRE(a.model.size() == b.model.size());
  for (const auto& t : b.model) {
    INFO("/model/" << t.name);
    REQUIRE(a.find_model(t.name) != nullptr);
    if (t.type == TensorType::Int64) continue;  // num_batches_tracked: unused with a fixed momentum
    CHECK(relative_difference(*a.find_model(t.name), t) < 1e-4);
  }
  REQUIRE(a.optimizer_state.size() == b.optimizer_state.size());
  for (const auto& t : b.optimizer_state) {
    INFO("/optimizer/" << t.name);
    const auto slash = t.name.find('/');
    const auto* other = a.find_optimizer(t.name.substr(0, slash), t.name.substr(slash + 1));
    REQUIRE(other != nullptr);
    CHECK(relative_difference(*other, t) < 1e-4);
  }
  // The checkpoint keeps every report of the trial, the paused job's included.
  CHECK(a.metrics.size() == b.metrics.size());
}

}  // namespace

TEST_CASE("a paused and resumed trial ends exactly as one trained without pausing") {
  torch::set_num_threads(1);
  const auto split = synthetic_split(192, 60);  // 12 steps of 16 per epoch
  TempDir dir;
  for (const auto& c : cases()) {
    SECTION(c.name) {
      // The reference: trained to budget 2 in one job, alone.
      datasets::BatchStream reference_stream(split, torch::kCPU, 3);
      PackExecutor reference_pack(reference_stream, BudgetUnit::Epochs, false);
      reference_pack.add(job(0, c.config, 2));
      const auto reference = run(reference_pack)[0];
      REQUIRE(reference.size() == 4);
      const std::vector<PackEvent> reference_tail(reference.begin() + 2, reference.end());

      SECTION("alone, paused and resumed alone") {
        datasets::BatchStream stream(split, torch::kCPU, 3);
        PackExecutor first(stream, BudgetUnit::Epochs, false);
        first.add(job(0, c.config, 1));
        auto paused = run(first)[0];
        REQUIRE(paused.back().final);
        REQUIRE(paused.back().checkpoint);
        CHECK(paused.back().checkpoint->step == 12);
        PackExecutor second(stream, BudgetUnit::Epochs, false);
        second.add(job(0, c.config, 2, through_file(*paused.back().checkpoint, dir)));
        check_same(run(second)[0], reference_tail);
      }
      SECTION("paused in a fused pack, resumed in another fused pack") {
        datasets::BatchStream stream(split, torch::kCPU, 3);
        PackExecutor first(stream, BudgetUnit::Epochs, true);
        first.add(job(1, sibling(c.config), 3));
        first.step_round();
        first.add(job(0, c.config, 1));
        first.add(job(2, sibling(sibling(c.config)), 1.5));
        CHECK(first.fused_groups() == 1);
        auto paused = run(first)[0];
        REQUIRE(paused.back().checkpoint);

        PackExecutor second(stream, BudgetUnit::Epochs, true);
        second.add(job(3, sibling(c.config), 2));
        for (int i = 0; i < 5; ++i) second.step_round();  // the group is at another step
        second.add(job(0, c.config, 2, through_file(*paused.back().checkpoint, dir)));
        CHECK(second.fused_groups() == 1);
        check_same(run(second)[0], reference_tail);
      }
      SECTION("checkpointed inside a job at a step no report falls on, in a fused pack, resumed alone") {
        // checkpoint_every: the actor saves between rounds; then it dies mid-job.
        datasets::BatchStream stream(split, torch::kCPU, 3);
        PackExecutor dying(stream, BudgetUnit::Epochs, true);
        dying.add(job(8, sibling(c.config), 2));
        dying.add(job(0, c.config, 2));
        CHECK(dying.checkpoint_now(0) == nullptr);  // nothing trained yet
        for (int i = 0; i < 7; ++i) dying.step_round();
        const auto inside = dying.checkpoint_now(0);
        REQUIRE(inside);
        CHECK(inside->step == 7);
        CHECK(inside->budget == Approx(7.0 / 12));
        CHECK(inside->metrics.size() == 1);  // the report at 0.5
        PackExecutor restarted(stream, BudgetUnit::Epochs, false);
        restarted.add(job(0, c.config, 2, through_file(*inside, dir)));
        check_same(run(restarted)[0], std::vector<PackEvent>(reference.begin() + 1, reference.end()));
      }
      SECTION("paused in a mixed pack, resumed fused, and the other way round") {
        datasets::BatchStream stream(split, torch::kCPU, 3);
        PackExecutor mixed(stream, BudgetUnit::Epochs, false);
        mixed.add(job(4, c.other, 1.5));
        mixed.add(job(0, c.config, 1));
        auto paused = run(mixed)[0];
        PackExecutor fused(stream, BudgetUnit::Epochs, true);
        fused.add(job(5, sibling(c.config), 1));
        fused.add(job(6, c.other, 1));
        fused.add(job(0, c.config, 1.5, through_file(*paused.back().checkpoint, dir)));
        // The companion fuses too when only its optimizer or widths differ.
        CHECK(fused.fused_groups() ==
              (fusion_key(parse_trial_spec(c.config)) == fusion_key(parse_trial_spec(c.other)) ? 1u : 2u));
        auto middle = run(fused)[0];
        REQUIRE(middle.size() == 1);
        PackExecutor last(stream, BudgetUnit::Epochs, false);
        last.add(job(7, c.other, 1));
        last.add(job(0, c.config, 2, through_file(*middle.back().checkpoint, dir)));
        auto resumed = run(last)[0];
        REQUIRE(resumed.size() == 1);
        middle.back().final = false;  // its job ended at 1.5; the reference only reported there
        middle.push_back(resumed.back());
        check_same(middle, reference_tail);
      }
    }
  }
}

TEST_CASE("a checkpoint of another architecture or optimizer is refused and the pack goes on") {
  const auto split = synthetic_split(64, 20);
  datasets::BatchStream stream(split, torch::kCPU, 3);
  const auto adam = with(kMlp, {{"optimizer", std::string("adam")}, {"lr", 0.01}});
  PackExecutor first(stream, BudgetUnit::Steps, true);
  first.add(job(0, adam, 3));
  const auto checkpoint = run(first)[0].back().checkpoint;
  REQUIRE(checkpoint);

  for (bool fuse : {true, false}) {
    PackExecutor pack(stream, BudgetUnit::Steps, fuse);
    pack.add(job(1, adam, 4));
    auto wider = with(adam, {{"width", std::int64_t{32}}});
    CHECK_THROWS_WITH(pack.add(job(0, wider, 6, checkpoint)), Catch::Contains("another architecture"));
    auto cnn = with(kCnn, {{"optimizer", std::string("adam")}});
    CHECK_THROWS_WITH(pack.add(job(0, cnn, 6, checkpoint)), Catch::Contains("another architecture"));
    auto sgd = with(adam, {{"optimizer", std::string("sgd")}});
    CHECK_THROWS_WITH(pack.add(job(0, sgd, 6, checkpoint)), Catch::Contains("written for optimizer adam"));
    CHECK(pack.size() == 1);
    CHECK_FALSE(pack.contains(0));
    auto events = run(pack);
    CHECK(events[1].back().final);
  }
}

TEST_CASE("a trial resumed to a budget it already reached ends at once") {
  const auto split = synthetic_split(64, 20);
  datasets::BatchStream stream(split, torch::kCPU, 3);
  const auto config = with(kMlp, {{"optimizer", std::string("sgd")}, {"lr", 0.05}});
  PackExecutor first(stream, BudgetUnit::Steps, true);
  first.add(job(0, config, 4));
  const auto paused = run(first)[0].back();
  PackExecutor pack(stream, BudgetUnit::Steps, true);
  pack.add(job(0, config, 4, paused.checkpoint));
  CHECK_FALSE(pack.empty());
  const auto events = pack.step_round();
  REQUIRE(events.size() == 1);
  CHECK(events[0].final);
  CHECK(events[0].budget == 4);
  CHECK(events[0].metrics.at("val_loss") == paused.metrics.at("val_loss"));
  REQUIRE(events[0].checkpoint);
  CHECK(events[0].checkpoint->step == paused.checkpoint->step);
  CHECK(pack.empty());
}

TEST_CASE("a checkpoint loads into every tensor of a layer-library model, attention's packed q, k, v too") {
  // Attention's in_proj is stored [E, 3, E] and held [3E, E] by LibTorch. The target's member 0
  // is padded (fused beside a wider member), so its q, k, v blocks in solo layout are a copy,
  // not a view: a load that wrote into member_tensors() would be lost. The load must convert
  // each tensor into the stored layout instead.
  auto build = [](std::uint64_t seed, std::int64_t heads) {
    torch::manual_seed(seed);
    auto model = std::make_shared<packtune::layers::Sequential>();
    model->emplace<packtune::layers::TransformerEncoderLayer>(4 * heads, heads, 16, 0.0, "relu");
    model->emplace<packtune::layers::Linear>(4 * heads, 3);
    return model;
  };
  auto source = build(1, 2), target = build(2, 2);
  // Unpadded, the solo layout is a view, which would hide such a load's bug.
  REQUIRE(source->member_tensors(0).front().second.is_alias_of(source->stacked_parameters().front().tensor));
  target->append(*build(3, 3));
  REQUIRE_FALSE(target->member_tensors(0).front().second.is_alias_of(
      target->stacked_parameters().front().tensor));
  auto wider = target->member_tensors(1);
  for (auto& [name, tensor] : wider) tensor = tensor.clone();
  packtune::actors::TrialCheckpoint checkpoint;
  checkpoint.trial = 7;
  for (const auto& [name, tensor] : source->member_tensors(0)) {
    checkpoint.model.push_back(packtune::actors::to_stored(name, tensor));
  }
  packtune::actors::load_member_state(*target, checkpoint);
  const auto expected = source->member_tensors(0);
  const auto loaded = target->member_tensors(0);
  REQUIRE(loaded.size() == expected.size());
  for (std::size_t i = 0; i < loaded.size(); ++i) {
    INFO(loaded[i].first);
    CHECK(loaded[i].first == expected[i].first);
    CHECK(torch::equal(loaded[i].second, expected[i].second));
  }
  // The wider member beside it is untouched.
  const auto after = target->member_tensors(1);
  for (std::size_t i = 0; i < after.size(); ++i) CHECK(torch::equal(after[i].second, wider[i].second));
}
