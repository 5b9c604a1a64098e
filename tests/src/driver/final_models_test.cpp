#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "driver/final_models.hpp"

using namespace packtune;

TEST_CASE("FinalModels keeps the best few finished trials' final models and names the one let go") {
  SECTION("max: higher is better, ties to the lower trial id") {
    FinalModels models(2, tuners::Mode::Max);
    CHECK_FALSE(models.finished(5, 0.80));
    CHECK_FALSE(models.finished(3, 0.90));
    CHECK(models.kept() == std::vector<tuners::TrialId>{3, 5});
    CHECK(models.finished(7, 0.70) == 7);  // worse than both: its own model goes
    CHECK(models.finished(1, 0.80) == 5);  // ties 5's metric and ranks before it
    CHECK(models.kept() == std::vector<tuners::TrialId>{3, 1});
  }
  SECTION("min, and a diverged trial (NaN) ranks last") {
    FinalModels models(1, tuners::Mode::Min);
    CHECK_FALSE(models.finished(2, std::numeric_limits<double>::quiet_NaN()));
    CHECK(models.finished(4, 0.5) == 2);
    CHECK(models.finished(6, 0.2) == 4);
    CHECK(models.kept() == std::vector<tuners::TrialId>{6});
  }
}
