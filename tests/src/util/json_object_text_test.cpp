#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "util/json_object_text.hpp"

using packtune::util::JsonObjectText;

namespace {

// Keys and strings from a small alphabet, so that keys repeat, share prefixes, and need
// escaping (quotes, backslashes, control characters, UTF-8).
std::string random_text(std::mt19937_64& rng) {
  static const std::vector<std::string> pieces{"a", "b", "lr", "val_loss", "_", "A", "\"", "\\", "\n", "\t",
                                               std::string(1, '\x01'), "\xc3\xa9", "\xe2\x82\xac", " ", "0", "~"};
  std::uniform_int_distribution<std::size_t> length(0, 4), piece(0, pieces.size() - 1);
  std::string s;
  for (auto n = length(rng); n > 0; --n) s += pieces[piece(rng)];
  return s;
}

double random_double(std::mt19937_64& rng) {
  switch (std::uniform_int_distribution<int>(0, 7)(rng)) {
    case 0: return std::numeric_limits<double>::quiet_NaN();
    case 1: return std::uniform_int_distribution<int>(0, 1)(rng) ? HUGE_VAL : -HUGE_VAL;
    case 2: return -0.0;
    case 3: return static_cast<double>(std::uniform_int_distribution<int>(-5, 40)(rng));
    case 4: return std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng),
                              std::uniform_int_distribution<int>(-1070, 1020)(rng));
    case 5: return std::numeric_limits<double>::denorm_min();
    default: return std::uniform_real_distribution<double>(-2, 2)(rng);
  }
}

}  // namespace

TEST_CASE("JsonObjectText writes what nlohmann::json's dump() writes for the same object (random objects)") {
  std::mt19937_64 rng(20261130);
  for (int round = 0; round < 3000; ++round) {
    JsonObjectText text;
    nlohmann::json oracle = nlohmann::json::object();
    const int members = std::uniform_int_distribution<int>(0, 9)(rng);
    for (int m = 0; m < members; ++m) {
      const auto key = random_text(rng);
      switch (std::uniform_int_distribution<int>(0, 6)(rng)) {
        case 0: {
          const double v = random_double(rng);
          text.add(key, v);
          oracle[key] = v;
          break;
        }
        case 1: {
          const auto v = static_cast<std::int64_t>(rng());
          text.add(key, v);
          oracle[key] = v;
          break;
        }
        case 2: {
          const bool v = rng() % 2 == 0;
          text.add(key, v);
          oracle[key] = v;
          break;
        }
        case 3: {
          const auto v = random_text(rng);
          text.add(key, v);
          oracle[key] = v;
          break;
        }
        case 4:
          text.add_null(key);
          oracle[key] = nullptr;
          break;
        case 5: {
          JsonObjectText inner;
          nlohmann::json inner_oracle = nlohmann::json::object();
          const double v = random_double(rng);
          const auto inner_key = random_text(rng);
          inner.add(inner_key, v).add("n", 7);
          inner_oracle[inner_key] = v;
          inner_oracle["n"] = 7;
          text.add_json(key, inner.text());
          oracle[key] = inner_oracle;
          break;
        }
        default: {
          const int v = std::uniform_int_distribution<int>(std::numeric_limits<int>::min(),
                                                           std::numeric_limits<int>::max())(rng);
          text.add(key, v);
          oracle[key] = v;
        }
      }
    }
    const auto written = text.text();
    INFO("round " << round);
    REQUIRE(written == oracle.dump());
    REQUIRE(text.text() == "{}");  // empty again
  }
}

TEST_CASE("JsonObjectText: the edges of numbers, and invalid UTF-8 refused as dump() refuses it") {
  JsonObjectText text;
  nlohmann::json oracle;
  const double values[] = {0.1, 1.0, 1e-5, 1e21, 123456789012345680.0, std::numeric_limits<double>::max(),
                           std::numeric_limits<double>::lowest(), std::numeric_limits<double>::min()};
  for (std::size_t i = 0; i < std::size(values); ++i) {
    text.add("k" + std::to_string(i), values[i]);
    oracle["k" + std::to_string(i)] = values[i];
  }
  text.add("min", std::numeric_limits<std::int64_t>::min()).add("max", std::numeric_limits<std::int64_t>::max());
  oracle["min"] = std::numeric_limits<std::int64_t>::min();
  oracle["max"] = std::numeric_limits<std::int64_t>::max();
  CHECK(text.text() == oracle.dump());
  CHECK_THROWS_AS(JsonObjectText().add("bad", std::string("\xff")), nlohmann::json::type_error);
  JsonObjectText bad_key;
  bad_key.add(std::string("\xc3"), 1);
  CHECK_THROWS_AS(bad_key.text(), nlohmann::json::type_error);
}
