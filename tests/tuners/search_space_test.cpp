#include <catch2/catch.hpp>

#include <set>

#include "packtune/error.hpp"
#include "tuners/search_space.hpp"

using packtune::InputError;
using packtune::tuners::SearchSpace;

namespace {
nlohmann::json space_json() {
  return nlohmann::json::parse(R"({
    "lr": {"type": "loguniform", "low": 1e-4, "high": 1e-1},
    "dropout": {"type": "uniform", "low": 0.0, "high": 0.5},
    "depth": {"type": "randint", "low": 1, "high": 3},
    "optimizer": {"type": "choice", "values": ["sgd", "adam"]},
    "width": {"type": "choice", "values": [64, 128, 256]}
  })");
}
}  // namespace

TEST_CASE("samples stay inside their distributions") {
  auto space = SearchSpace::from_json(space_json());
  std::mt19937_64 rng(7);
  std::set<std::int64_t> depths;
  std::set<std::string> optimizers;
  for (int i = 0; i < 500; ++i) {
    auto c = space.sample(rng);
    const double lr = std::get<double>(c.at("lr"));
    CHECK(lr >= 1e-4);
    CHECK(lr < 1e-1);
    const double dropout = std::get<double>(c.at("dropout"));
    CHECK(dropout >= 0.0);
    CHECK(dropout < 0.5);
    depths.insert(std::get<std::int64_t>(c.at("depth")));
    optimizers.insert(std::get<std::string>(c.at("optimizer")));
    const auto width = std::get<std::int64_t>(c.at("width"));
    CHECK((width == 64 || width == 128 || width == 256));
  }
  CHECK(depths == std::set<std::int64_t>{1, 2, 3});
  CHECK(optimizers == std::set<std::string>{"adam", "sgd"});
}

TEST_CASE("loguniform spreads evenly over decades") {
  auto space = SearchSpace::from_json(
      nlohmann::json::parse(R"({"lr": {"type": "loguniform", "low": 1e-4, "high": 1}})"));
  std::mt19937_64 rng(1);
  int below_1e2 = 0;
  const int n = 4000;
  for (int i = 0; i < n; ++i) below_1e2 += std::get<double>(space.sample(rng).at("lr")) < 1e-2;
  CHECK(below_1e2 == Approx(n / 2).margin(n * 0.05));
}

TEST_CASE("the same seed gives the same configs, whatever the JSON key order") {
  auto a = SearchSpace::from_json(space_json());
  auto reordered = nlohmann::json::parse(R"({
    "width": {"type": "choice", "values": [64, 128, 256]},
    "optimizer": {"type": "choice", "values": ["sgd", "adam"]},
    "depth": {"type": "randint", "low": 1, "high": 3},
    "dropout": {"type": "uniform", "low": 0.0, "high": 0.5},
    "lr": {"type": "loguniform", "low": 1e-4, "high": 1e-1}
  })");
  auto b = SearchSpace::from_json(reordered);
  std::mt19937_64 r1(42), r2(42), r3(43);
  for (int i = 0; i < 20; ++i) {
    auto c1 = a.sample(r1);
    CHECK(c1 == b.sample(r2));
    CHECK(c1 != a.sample(r3));
  }
}

TEST_CASE("bad search spaces name the field and what is expected") {
  auto error_of = [](const char* text) {
    try {
      SearchSpace::from_json(nlohmann::json::parse(text));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(error_of(R"({"lr": {"type": "uniform", "low": 1, "high": 1}})"),
             Catch::Contains("space.lr") && Catch::Contains("empty range"));
  CHECK_THAT(error_of(R"({"lr": {"type": "loguniform", "low": 0, "high": 1}})"),
             Catch::Contains("space.lr.low"));
  CHECK_THAT(error_of(R"({"lr": {"type": "gaussian", "low": 0, "high": 1}})"),
             Catch::Contains("space.lr.type") && Catch::Contains("loguniform"));
  CHECK_THAT(error_of(R"({"lr": {"type": "uniform", "low": "a", "high": 1}})"),
             Catch::Contains("space.lr.low") && Catch::Contains("expected a number"));
  CHECK_THAT(error_of(R"({"lr": {"type": "uniform", "low": 0, "high": 1, "step": 2}})"),
             Catch::Contains("space.lr.step") && Catch::Contains("unknown key"));
  CHECK_THAT(error_of(R"({"opt": {"type": "choice", "values": []}})"),
             Catch::Contains("space.opt.values"));
  CHECK_THAT(error_of(R"({"d": {"type": "randint", "low": 1.5, "high": 3}})"),
             Catch::Contains("integer"));
  CHECK_THAT(error_of(R"({"d": {"type": "randint", "low": 4, "high": 3}})"),
             Catch::Contains("empty range"));
  CHECK_THAT(error_of(R"([1, 2])"), Catch::Contains("expected an object"));
}

TEST_CASE("grid enumerates every combination") {
  auto space = SearchSpace::from_json(nlohmann::json::parse(R"({
    "opt": {"type": "choice", "values": ["sgd", "adam"]},
    "depth": {"type": "randint", "low": 1, "high": 3},
    "lr": {"type": "loguniform", "low": 0.001, "high": 0.1}
  })"));
  auto grid = space.grid(3);
  CHECK(grid.size() == 2 * 3 * 3);
  std::set<double> lrs;
  for (const auto& c : grid) lrs.insert(std::get<double>(c.at("lr")));
  REQUIRE(lrs.size() == 3);
  CHECK(*lrs.begin() == Approx(0.001));
  CHECK(*std::next(lrs.begin()) == Approx(0.01));
}
