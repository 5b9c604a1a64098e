#include <catch2/catch.hpp>

#include <cmath>

#include "packtune/error.hpp"
#include "tuners/schedulers/brackets.hpp"

using namespace packtune::tuners;

namespace {
std::vector<std::pair<std::int64_t, double>> rungs_of(const Bracket& b) {
  std::vector<std::pair<std::int64_t, double>> out;
  for (const auto& r : b.rungs) out.emplace_back(r.n, r.budget);
  return out;
}
using Rungs = std::vector<std::pair<std::int64_t, double>>;
}  // namespace

TEST_CASE("R = 81, eta = 3 gives the Hyperband paper's table") {
  const auto brackets = hyperband_brackets(1, 81, 3);
  REQUIRE(brackets.size() == 5);
  CHECK(brackets[0].s == 4);
  CHECK(rungs_of(brackets[0]) == Rungs{{81, 1}, {27, 3}, {9, 9}, {3, 27}, {1, 81}});
  CHECK(rungs_of(brackets[1]) == Rungs{{34, 3}, {11, 9}, {3, 27}, {1, 81}});
  CHECK(rungs_of(brackets[2]) == Rungs{{15, 9}, {5, 27}, {1, 81}});
  CHECK(rungs_of(brackets[3]) == Rungs{{8, 27}, {2, 81}});
  CHECK(rungs_of(brackets[4]) == Rungs{{5, 81}});
  CHECK(brackets[4].s == 0);
}

TEST_CASE("s_max counts powers of eta even when max/min is inexact in binary") {
  CHECK(max_early_stopping_rate(1, 81, 3) == 4);
  CHECK(max_early_stopping_rate(0.1, 8.1, 3) == 4);  // 8.1/0.1 = 80.99999999999999
  CHECK(max_early_stopping_rate(0.01, 0.81, 3) == 4);
  CHECK(max_early_stopping_rate(1, 80.9, 3) == 3);
  CHECK(max_early_stopping_rate(1, 1, 3) == 0);
  CHECK(max_early_stopping_rate(1, 2.9, 3) == 0);
  CHECK(max_early_stopping_rate(1, 1024, 2) == 10);
  const auto b = hyperband_bracket(0.1, 8.1, 3, 4);
  CHECK(rungs_of(b) == Rungs{{81, 0.1}, {27, 0.3}, {9, 0.9}, {3, 2.7}, {1, 8.1}});
}

TEST_CASE("every bracket follows the formula and ends at the max budget") {
  for (std::int64_t eta : {2, 3, 4, 5}) {
    for (double min_budget : {0.5, 1.0, 3.0}) {
      for (double ratio : {1.0, 2.0, 7.5, 27.0, 81.0, 100.0, 1000.0}) {
        const double max_budget = min_budget * ratio;
        const auto brackets = hyperband_brackets(min_budget, max_budget, eta);
        const int s_max = brackets.front().s;
        CHECK(std::pow(eta, s_max) <= ratio * (1 + 1e-9));
        CHECK(std::pow(eta, s_max + 1) > ratio);
        REQUIRE(brackets.size() == static_cast<std::size_t>(s_max + 1));
        for (const auto& b : brackets) {
          const double big_b = (s_max + 1) * ratio;
          const auto n = static_cast<std::int64_t>(
              std::ceil(big_b / ratio * std::pow(eta, b.s) / (b.s + 1) - 1e-9));
          REQUIRE(b.rungs.size() == static_cast<std::size_t>(b.s + 1));
          CHECK(b.rungs.back().budget == max_budget);
          for (int i = 0; i <= b.s; ++i) {
            CHECK(b.rungs[i].n ==
                  static_cast<std::int64_t>(std::floor(n * std::pow(eta, -i) + 1e-9)));
            const double r = ratio * std::pow(eta, -b.s);
            CHECK(b.rungs[i].budget == Approx(min_budget * r * std::pow(eta, i)).epsilon(1e-10));
          }
          // Hyperband's promise: no bracket spends more than B min-budgets, even when every
          // rung retrains its configs from scratch.
          CHECK(b.total_budget() <= big_b * min_budget * (1 + 1e-9));
        }
      }
    }
  }
}

TEST_CASE("resized brackets shrink by floor(n/eta) and drop empty rungs") {
  const auto full = hyperband_bracket(1, 81, 3, 4);
  CHECK(rungs_of(resize_bracket(full, 10, 3)) == Rungs{{10, 1}, {3, 3}, {1, 9}});
  CHECK(rungs_of(resize_bracket(full, 2, 3)) == Rungs{{2, 1}});
  CHECK(rungs_of(resize_bracket(full, 200, 3)) == Rungs{{200, 1}, {66, 3}, {22, 9}, {7, 27}, {2, 81}});
}

TEST_CASE("ASHA rungs start at the min budget") {
  CHECK(asha_rung_budgets(1, 81, 3, 0) == std::vector<double>{1, 3, 9, 27, 81});
  CHECK(asha_rung_budgets(1, 81, 3, 2) == std::vector<double>{9, 27, 81});
  CHECK(asha_rung_budgets(1, 100, 3, 0) == std::vector<double>{1, 3, 9, 27, 81});
  CHECK(asha_rung_budgets(0.1, 8.1, 3, 1) == std::vector<double>{0.3, 0.9, 2.7, 8.1});
  CHECK_THROWS_AS(asha_rung_budgets(1, 81, 3, 5), packtune::InputError);
}

TEST_CASE("bad schedules are input errors naming the field") {
  const auto message = [](double lo, double hi, std::int64_t eta) {
    try {
      hyperband_brackets(lo, hi, eta);
    } catch (const packtune::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK_THAT(message(1, 81, 1), Catch::Contains("eta") && Catch::Contains(">= 2"));
  CHECK_THAT(message(1, 81, 0), Catch::Contains("eta"));
  CHECK_THAT(message(10, 1, 3), Catch::Contains("budget.min") && Catch::Contains("min <= max"));
  CHECK_THAT(message(0, 1, 3), Catch::Contains("budget.min") && Catch::Contains("positive"));
  CHECK_THAT(message(-1, 1, 3), Catch::Contains("budget.min"));
  CHECK_THAT(message(1, -1, 3), Catch::Contains("budget.max") && Catch::Contains("positive"));
  CHECK_THAT(message(1, INFINITY, 3), Catch::Contains("budget.max"));
  CHECK_THAT(message(1e-300, 1e300, 2), Catch::Contains("too large"));
}
