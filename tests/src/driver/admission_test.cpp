#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "driver/admission.hpp"

using namespace packtune;
namespace proto = packtune::protocol;

TEST_CASE("admission: reports hold only the metrics the models report, finite or NaN") {
  CHECK(Admission::metrics_refusal({{"val_accuracy", 0.5}, {"val_loss", 1}, {"train_loss", 2}}, false).empty());
  CHECK(Admission::metrics_refusal({{"val_loss", std::nan("")}}, false).empty());
  CHECK_THAT(Admission::metrics_refusal({{"trial", 1e300}}, false), Catch::Contains("unknown metric \"trial\""));
  CHECK_FALSE(Admission::metrics_refusal({{"budget", -7}}, false).empty());
  CHECK_FALSE(Admission::metrics_refusal({{"test_accuracy", 0.5}}, false).empty());
  CHECK_THAT(Admission::metrics_refusal({{"val_loss", std::numeric_limits<double>::infinity()}}, false),
             Catch::Contains("infinite"));
  const auto long_name = Admission::metrics_refusal({{std::string(100'000, 'm'), 1}}, false);
  CHECK_THAT(long_name, Catch::Contains("100000 characters"));
  CHECK(long_name.size() < 300);
  CHECK(Admission::metrics_refusal({{"test_accuracy", 0.5}, {"test_loss", 1}}, true).empty());
  CHECK_FALSE(Admission::metrics_refusal({{"val_accuracy", 0.5}}, true).empty());
}

TEST_CASE("admission: an offer names the trial held, a budget within its job and a bounded size") {
  const Admission::Held held{4, 2.0, 0};
  CHECK(Admission::offer_refusal({1, "trial-4-budget-2.h5", 100, ""}, held, false).empty());
  CHECK(Admission::offer_refusal({1, "trial-4-budget-0.5.h5", 100, ""}, held, true).empty());
  CHECK_FALSE(Admission::offer_refusal({1, "trial-4-budget-0.5.h5", 100, ""}, held, false).empty());
  CHECK_FALSE(Admission::offer_refusal({1, "trial-5-budget-2.h5", 100, ""}, held, true).empty());
  CHECK_FALSE(Admission::offer_refusal({1, "trial-4-budget-2.1.h5", 100, ""}, held, true).empty());
  CHECK_FALSE(Admission::offer_refusal({1, "trial-4-budget-0.h5", 100, ""}, held, true).empty());
  CHECK_FALSE(Admission::offer_refusal({1, "trial-4-budget-2.h5", 0, ""}, held, true).empty());
  CHECK_FALSE(Admission::offer_refusal({1, "trial-4-budget-2.h5", proto::kMaxCheckpointBytes + 1, ""}, held, true).empty());
  CHECK_FALSE(Admission::offer_refusal({1, "../trial-4-budget-2.h5", 100, ""}, held, true).empty());
  // Six significant digits in a name; a promotion to a budget already reached offers its checkpoint.
  CHECK(Admission::offer_refusal({1, "trial-4-budget-0.333333.h5", 1, ""}, {4, 1.0 / 3, 0}, false).empty());
  CHECK(Admission::offer_refusal({1, "trial-4-budget-3.h5", 1, ""}, {4, 2.0, 3.0}, false).empty());
  CHECK(Admission::budget_refusal(2.0, held).empty());
  CHECK_FALSE(Admission::budget_refusal(std::nan(""), held).empty());
  CHECK_FALSE(Admission::budget_refusal(-7, held).empty());
}

TEST_CASE("admission: refusals are logged ten a minute, then counted in one line") {
  std::ostringstream lines;
  auto before = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>("admission", std::make_shared<spdlog::sinks::ostream_sink_mt>(lines));
  spdlog::set_default_logger(logger);
  Admission admission;
  const auto start = Admission::Clock::time_point{} + std::chrono::hours(1);
  for (int i = 0; i < 1000; ++i) admission.refused("a message " + std::to_string(i), start);
  admission.refused("the next minute", start + std::chrono::seconds(61));
  spdlog::set_default_logger(before);
  const auto text = lines.str();
  CHECK(admission.refusals() == 1001);
  CHECK(std::count(text.begin(), text.end(), '\n') == 12);
  CHECK_THAT(text, Catch::Contains("refused 990 more message(s)") && Catch::Contains("the next minute"));
  CHECK(Admission::printable(std::string(1000, 'a') + "\n").size() == 163);
  CHECK(Admission::printable("a\x1b[2Jb") == "a?[2Jb");
}
