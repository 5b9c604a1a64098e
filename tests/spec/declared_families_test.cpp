// A model plugin's family as the driver sees it: declarations, checked hyper-parameters with
// defaults, fusion keys from roles, declarations through JSON. Plain C++, no LibTorch.
#include <catch2/catch.hpp>

#include "packtune/error.hpp"
#include "spec/declared_families.hpp"
#include "spec/family_json.hpp"
#include "spec/trial_spec.hpp"

using namespace packtune::spec;
using packtune::layers::FamilyDeclaration;
using packtune::layers::HyperParameter;
using packtune::tuners::TrialConfig;

namespace {

HyperParameter parameter(std::string name, HyperParameter::Type type, HyperParameter::Role role,
                         packtune::tuners::ParamValue default_value, double low = 0, double high = 0) {
  HyperParameter p;
  p.name = std::move(name);
  p.type = type;
  p.role = role;
  p.default_value = std::move(default_value);
  p.low = low;
  p.high = high;
  return p;
}

FamilyDeclaration vgg() {
  using T = HyperParameter::Type;
  using R = HyperParameter::Role;
  FamilyDeclaration f;
  f.name = "test_vgg";
  f.hyperparameters = {parameter("blocks", T::Integer, R::Structure, std::int64_t{2}, 1, 3),
                       parameter("channels", T::Integer, R::Width, std::int64_t{16}, 1, 512),
                       parameter("dropout", T::Real, R::Value, 0.0, 0.0, 0.9),
                       parameter("batch_norm", T::Boolean, R::Structure, true)};
  auto pool = parameter("pool", T::Choice, R::Structure, std::string("max"));
  pool.choices = {"max", "avg"};
  f.hyperparameters.push_back(pool);
  return f;
}

const FamilyDeclaration& declared() {
  static const FamilyDeclaration f = [] {
    DeclaredFamilies::instance().add(vgg());
    return vgg();
  }();
  return f;
}

TrialConfig plugin_config(TrialConfig more = {}) {
  declared();
  more["family"] = std::string("test_vgg");
  return more;
}

}  // namespace

TEST_CASE("a plugin family's hyper-parameters parse with defaults filled in, in their types") {
  auto s = parse_trial_spec(plugin_config({{"channels", 32.0}, {"lr", 0.1}, {"batch_size", std::int64_t{64}}}));
  CHECK(s.model.family == "test_vgg");
  CHECK(plugin_family(s.model));
  CHECK(s.model.params.at("channels") == packtune::tuners::ParamValue(std::int64_t{32}));
  CHECK(s.model.params.at("blocks") == packtune::tuners::ParamValue(std::int64_t{2}));
  CHECK(s.model.params.at("pool") == packtune::tuners::ParamValue(std::string("max")));
  CHECK(s.optimizer.lr == 0.1);
  CHECK(s.batch_size == 64);
  CHECK(model_shape(s.model, 1, 28, 28, 10).parameters == 0);
  CHECK_FALSE(plugin_family(parse_trial_spec({{"family", std::string("cnn")}}).model));
}

TEST_CASE("a plugin family's hyper-parameters are checked, naming model.<key> or space.<key>") {
  CHECK_THROWS_WITH(parse_trial_spec(plugin_config({{"width", std::int64_t{3}}})),
                    Catch::StartsWith("model.width: not a hyper-parameter of model family test_vgg; expected one of "
                                      "blocks, channels, dropout, batch_norm, pool, family, optimizer"));
  CHECK_THROWS_WITH(parse_trial_spec(plugin_config({{"blocks", std::int64_t{4}}}), "space"),
                    Catch::StartsWith("space.blocks: 4 is out of range; expected 1 to 3"));
  CHECK_THROWS_WITH(parse_trial_spec(plugin_config({{"dropout", std::string("high")}})),
                    Catch::StartsWith("model.dropout: expected a number"));
  CHECK_THROWS_WITH(parse_trial_spec(plugin_config({{"batch_norm", std::int64_t{1}}})),
                    Catch::StartsWith("model.batch_norm: expected true or false"));
  CHECK_THROWS_WITH(parse_trial_spec(plugin_config({{"pool", std::string("min")}})),
                    Catch::Contains("expected one of max, avg"));
  CHECK_THROWS_WITH(parse_trial_spec(plugin_config({{"nesterov", true}})), Catch::Contains("momentum > 0"));
  CHECK_THROWS_WITH(parse_trial_spec({{"family", std::string("vgg_unknown")}}),
                    Catch::StartsWith("model.family: \"vgg_unknown\" is not allowed; expected one of mlp, cnn, resnet, torchscript, "
                                      "test_vgg"));
}

TEST_CASE("a plugin family's keys: structure fuses, widths pad, values fuse freely") {
  const auto base = parse_trial_spec(plugin_config());
  const auto wider = parse_trial_spec(plugin_config({{"channels", std::int64_t{64}}}));
  const auto deeper = parse_trial_spec(plugin_config({{"blocks", std::int64_t{3}}}));
  const auto dropout = parse_trial_spec(plugin_config({{"dropout", 0.5}}));
  const auto adam = parse_trial_spec(plugin_config({{"optimizer", std::string("adam")}}));
  CHECK(fusion_key(base) == fusion_key(wider));
  CHECK(unpadded_fusion_key(base) != unpadded_fusion_key(wider));
  CHECK(shape_key(base) != shape_key(wider));
  CHECK(fusion_key(base) != fusion_key(deeper));
  CHECK(fusion_key(base) == fusion_key(dropout));
  CHECK(unpadded_fusion_key(base) == unpadded_fusion_key(dropout));
  CHECK(shape_key(base) == shape_key(dropout));
  CHECK(fusion_key(base) == fusion_key(adam));
  CHECK(shape_key(base) != shape_key(adam));
  CHECK_FALSE(base.model == dropout.model);
}

TEST_CASE("declarations: built-in names, repeats and contradictions are refused") {
  declared();
  auto builtin = vgg();
  builtin.name = "cnn";
  CHECK_THROWS_WITH(DeclaredFamilies::instance().add(builtin), Catch::Contains("packtune's own"));
  CHECK_NOTHROW(DeclaredFamilies::instance().add(vgg()));  // the same again: kept once
  auto other = vgg();
  other.hyperparameters.pop_back();
  CHECK_THROWS_WITH(DeclaredFamilies::instance().add(other), Catch::Contains("declared twice, differently"));
  auto common = vgg();
  common.name = "test_common";
  common.hyperparameters[0].name = "lr";
  CHECK_THROWS_WITH(check_declaration(common), Catch::Contains("every family takes it already"));
  auto bad_default = vgg();
  bad_default.hyperparameters[1].default_value = std::int64_t{0};
  CHECK_THROWS_WITH(check_declaration(bad_default), Catch::Contains("its default: 0 is out of range"));
}

TEST_CASE("declarations survive JSON, and bad JSON is one line naming where") {
  const auto back = families_from_json(families_to_json({vgg()}), "plugin");
  REQUIRE(back.size() == 1);
  CHECK(back[0].name == "test_vgg");
  REQUIRE(back[0].hyperparameters.size() == vgg().hyperparameters.size());
  CHECK(back[0].hyperparameters[4].choices == std::vector<std::string>{"max", "avg"});
  CHECK(back[0].hyperparameters[1].role == HyperParameter::Role::Width);
  CHECK(back[0].hyperparameters[2].default_value == packtune::tuners::ParamValue(0.0));
  CHECK_THROWS_WITH(families_from_json(nlohmann::json::object(), "plugin"), "plugin: missing \"families\"");
  auto wrong = families_to_json({vgg()});
  wrong["families"][0]["hyperparameters"][0]["role"] = "depth";
  CHECK_THROWS_WITH(families_from_json(wrong, "plugin"),
                    Catch::StartsWith("plugin, family test_vgg.blocks.role: \"depth\" is not one of structure"));
}
