// Learning-rate schedules against PyTorch's own schedulers (lr_schedule_oracle.json, written by
// lr_schedule_oracle.py from torch.optim.lr_scheduler): every schedule's rate at every step.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>

#include <nlohmann/json.hpp>

#include "spec/lr_schedule.hpp"

using namespace packtune::spec;

TEST_CASE("every schedule's rate at every step is PyTorch's") {
  std::ifstream in(PACKTUNE_LR_ORACLE);
  REQUIRE(in);
  const auto oracle = nlohmann::json::parse(in);
  REQUIRE(oracle.at("cases").size() == 9);
  for (const auto& c : oracle.at("cases")) {
    LrSchedule schedule;
    schedule.name = c.at("name");
    schedule.factor = c.at("factor");
    ScheduleSteps steps{c.at("total"), c.at("warmup"), c.at("step_every")};
    const auto rates = c.at("rates").get<std::vector<double>>();
    REQUIRE(static_cast<std::int64_t>(rates.size()) == steps.total);
    for (std::int64_t i = 0; i < steps.total; ++i) {
      INFO(schedule.name << " warmup " << steps.warmup << " step " << i);
      // PyTorch's chainable forms multiply step by step: they round otherwise than a closed form.
      CHECK(lr_factor(schedule, steps, i) == Approx(rates[static_cast<std::size_t>(i)]).epsilon(1e-9).margin(1e-12));
    }
  }
}

TEST_CASE("past its last step a schedule stays at its end, and constant is 1 throughout") {
  const ScheduleSteps steps{10, 0, 3};
  LrSchedule cosine{"cosine"};
  CHECK(lr_factor(cosine, steps, 10) == Approx(0).margin(1e-15));
  CHECK(lr_factor(cosine, steps, 1000) == Approx(0).margin(1e-15));
  LrSchedule linear{"linear"};
  CHECK(lr_factor(linear, steps, 50) == 0);
  CHECK(LrSchedule{}.constant());
  for (std::int64_t i = 0; i < 20; ++i) CHECK(lr_factor(LrSchedule{}, steps, i) == 1);
  LrSchedule step{"step", 0, 3, 0.5};
  CHECK(lr_factor(step, steps, 9) == 0.125);
  CHECK(lr_factor(step, steps, 100) == 0.125);  // t stops at the last step, 10
}
