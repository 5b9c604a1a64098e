#include <catch2/catch.hpp>

#include "packtune/error.hpp"
#include "spec/trial_spec.hpp"

using namespace packtune::spec;
using packtune::tuners::TrialConfig;

TEST_CASE("a trial config parses into model and optimizer specs") {
  TrialConfig c{{"family", std::string("cnn")}, {"depth", std::int64_t{2}},
                {"channels", std::int64_t{8}}, {"lr", 0.05},
                {"optimizer", std::string("adamw")}, {"batch_size", std::int64_t{32}},
                {"batch_norm", false}, {"dropout", 0.25}};
  auto s = parse_trial_spec(c);
  CHECK(s.model.family == "cnn");
  CHECK(s.model.depth == 2);
  CHECK(s.model.channels == 8);
  CHECK_FALSE(s.model.batch_norm);
  CHECK(s.optimizer.name == "adamw");
  CHECK(s.optimizer.lr == 0.05);
  CHECK(s.batch_size == 32);
  CHECK(s.model.dropout == 0.25);
}

TEST_CASE("integral reals count as integers; everything else is checked") {
  CHECK(parse_trial_spec({{"width", 64.0}}).model.width == 64);
  CHECK_THROWS_WITH(parse_trial_spec({{"width", 64.5}}), Catch::Contains("model.width: expected an integer"));
  CHECK_THROWS_WITH(parse_trial_spec({{"lr", std::string("fast")}}), Catch::Contains("model.lr: expected a number"));
  CHECK_THROWS_WITH(parse_trial_spec({{"dropout", 1.5}}), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(parse_trial_spec({{"optimizer", std::string("lbfgs")}}), Catch::Contains("sgd, adam, adamw"));
  CHECK_THROWS_WITH(parse_trial_spec({{"nesterov", true}}), Catch::Contains("momentum > 0"));
  CHECK_THROWS_WITH(parse_trial_spec({{"family", std::string("cnn")}, {"depth", std::int64_t{5}}}),
                    Catch::Contains("1 to 3"));
  CHECK_THROWS_WITH(parse_trial_spec({{"colour", std::string("red")}}, "space"),
                    Catch::Contains("space.colour: unknown hyper-parameter"));
}

TEST_CASE("model shapes count parameters exactly") {
  ModelSpec mlp;
  mlp.depth = 1;
  mlp.width = 100;
  CHECK(model_shape(mlp, 1, 28, 28, 10).parameters == 784 * 100 + 100 + 100 * 10 + 10);
  ModelSpec cnn;
  cnn.family = "cnn";
  cnn.depth = 1;
  cnn.channels = 4;
  cnn.kernel = 3;
  cnn.batch_norm = false;
  cnn.width = 0;
  CHECK(model_shape(cnn, 1, 28, 28, 10).parameters == (9 * 4 + 4) + (4 * 14 * 14 * 10 + 10));
}

TEST_CASE("a torchscript trial is its file and the common keys; each file a shape that never fuses") {
  const TrialConfig c{{"family", std::string("torchscript")}, {"path", std::string("/models/small.pt")},
                      {"lr", 0.01}, {"optimizer", std::string("adam")}, {"batch_size", std::int64_t{32}}};
  const auto s = parse_trial_spec(c);
  CHECK(torchscript_family(s.model));
  CHECK_FALSE(plugin_family(s.model));
  CHECK(measured_family(s.model));
  CHECK_FALSE(fuses(s.model));
  CHECK(torchscript_path(s.model) == "/models/small.pt");
  CHECK(s.optimizer.name == "adam");
  CHECK(s.batch_size == 32);
  // No formula knows a module's size: the planner waits for an actor's measurement.
  CHECK(model_shape(s.model, 1, 28, 28, 10).parameters == 0);
  CHECK(fusion_key(s) == "torchscript//models/small.pt/b32");
  CHECK(shape_key(s) == "torchscript//models/small.pt/b32/adam");
  auto wide = c;
  wide["path"] = std::string("/models/wide.pt");
  CHECK(shape_key(parse_trial_spec(wide)) != shape_key(s));
  CHECK(fuses(parse_trial_spec({{"family", std::string("cnn")}}).model));

  auto no_path = c;
  no_path.erase("path");
  CHECK_THROWS_WITH(parse_trial_spec(no_path), Catch::StartsWith("model.path: model family torchscript needs the path"));
  // Any other key is an attribute the module must have (the actor checks that): its value kept.
  auto rate = c;
  rate["rate"] = 0.2;
  rate["label"] = std::string("x");
  const auto rated = parse_trial_spec(rate);
  CHECK(torchscript_attributes(rated.model) == TrialConfig{{"rate", 0.2}, {"label", std::string("x")}});
  CHECK(torchscript_attributes(s.model).empty());
  CHECK(attribute_kind(0.2) == "real");
  CHECK(attribute_kind(std::int64_t{2}) == "integer");
  CHECK(attribute_kind(true) == "bool");
  CHECK(attribute_kind(std::string("x")) == "string");
  auto number = c;
  number["path"] = std::int64_t{3};
  CHECK_THROWS_WITH(parse_trial_spec(number), Catch::StartsWith("model.path: expected the path of a TorchScript file"));
  CHECK_THROWS_AS(torchscript_path(parse_trial_spec({{"family", std::string("mlp")}}).model), packtune::Error);
}

// The keys are kept on disk (the throughput profile cache): their text must not change.
TEST_CASE("the built-in families' shape and fusion keys keep their text") {
  const auto mlp = parse_trial_spec({{"family", std::string("mlp")}, {"depth", std::int64_t{2}},
                                     {"width", std::int64_t{512}}, {"dropout", 0.1},
                                     {"optimizer", std::string("adam")}, {"batch_size", std::int64_t{128}}});
  CHECK(fusion_key(mlp) == "mlp/d2/relu/drop1/b128");
  CHECK(unpadded_fusion_key(mlp) == "mlp/d2/relu/drop1/b128/w512");
  CHECK(shape_key(mlp) == "mlp/d2/w512/relu/drop1/b128/adam");
  CHECK(fusion_key(parse_trial_spec({{"family", std::string("mlp")}, {"depth", std::int64_t{0}}})) == "mlp/d0/b128");

  const auto cnn = parse_trial_spec({{"family", std::string("cnn")}, {"depth", std::int64_t{3}},
                                     {"channels", std::int64_t{16}}, {"width", std::int64_t{0}},
                                     {"kernel", std::int64_t{5}}, {"batch_norm", false},
                                     {"optimizer", std::string("sgd")}, {"batch_size", std::int64_t{64}}});
  CHECK(fusion_key(cnn) == "cnn/d3/relu/drop0/b64/k5/bn0/fc0");
  CHECK(unpadded_fusion_key(cnn) == "cnn/d3/relu/drop0/b64/k5/bn0/fc0/w0/c16");
  CHECK(shape_key(cnn) == "cnn/d3/w0/relu/drop0/b64/sgd/c16/k5/bn0");

  const auto resnet = parse_trial_spec({{"family", std::string("resnet")}, {"stages", std::int64_t{3}},
                                        {"blocks", std::int64_t{2}}, {"channels", std::int64_t{32}},
                                        {"optimizer", std::string("sgd")}, {"batch_size", std::int64_t{128}}});
  CHECK(fusion_key(resnet) == "resnet/s3x2/relu/drop0/b128/bn1");
  CHECK(unpadded_fusion_key(resnet) == "resnet/s3x2/relu/drop0/b128/bn1/c32");
  CHECK(shape_key(resnet) == "resnet/s3x2/c32/relu/drop0/b128/sgd/bn1");
}
