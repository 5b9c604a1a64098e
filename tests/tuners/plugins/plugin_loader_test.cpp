#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <fstream>

#include "packtune/error.hpp"
#include "../tuner_test_support.hpp"
#include "tuners/plugins/plugin_loader.hpp"
#include "tuners/simulate/synthetic_objective.hpp"

using namespace packtune::tuners;
using namespace packtune::tuners::testing;

TEST_CASE("a plugin registers its tuners when loaded, once") {
  CHECK_FALSE(TunerRegistry::instance().contains("median_stopping"));
  const auto names = load_tuner_plugin(PACKTUNE_TEST_PLUGIN_MEDIAN);
  CHECK(names == std::vector<std::string>{"median_stopping"});
  CHECK(load_tuner_plugin(PACKTUNE_TEST_PLUGIN_MEDIAN) == names);

  auto context = make_context(1, 27, 40, Mode::Min);
  context.seed = 3;
  auto tuner = TunerRegistry::instance().create("median_stopping", context);
  CHECK(tuner->name() == "median_stopping");
  SyntheticObjective objective(context.space, 3, Mode::Min, 27);
  SimulationSummary summary;
  simulate(*tuner, objective, Mode::Min, 4, &summary, 1);
  CHECK(summary.trials == 40);
  CHECK(summary.stopped > 5);       // the rule does stop the worse half early ...
  CHECK(summary.stopped < 40);      // ... but not everyone
  CHECK(summary.best_budget == 27);

  context.settings["grace"] = 2;
  CHECK_THAT(error_of([&] { TunerRegistry::instance().create("median_stopping", context); }),
             Catch::Contains("tuner.grace") && Catch::Contains("grace_budget"));
}

TEST_CASE("plugins that cannot be used are input errors saying why") {
  CHECK_THAT(error_of([] { load_tuner_plugin("/nonexistent/libtuner.so"); }),
             Catch::Contains("/nonexistent/libtuner.so") && Catch::Contains("no such file"));
  CHECK_THAT(error_of([] { load_tuner_plugin(""); }), Catch::Contains("no such file"));
  // There, but nothing dlopen could load (it would block on a FIFO nobody writes to).
  const std::string fifo = "plugin_loader_test.fifo";
  std::remove(fifo.c_str());
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const std::string expected = "; expected the path of a shared library (.so) built against packtune::tuners";
  CHECK(error_of([&] { load_tuner_plugin(fifo); }) == "tuner plugin " + fifo + ": not a regular file (a FIFO)" + expected);
  std::remove(fifo.c_str());
  CHECK(error_of([] { load_tuner_plugin("/dev/zero"); }) ==
        "tuner plugin /dev/zero: not a regular file (a character device)" + expected);
  CHECK(error_of([] { load_tuner_plugin("/"); }) == "tuner plugin /: not a regular file (a folder)" + expected);

  const std::string not_a_library = "plugin_loader_test_not_a_library.so";
  std::ofstream(not_a_library) << "not ELF\n";
  CHECK_THAT(error_of([&] { load_tuner_plugin(not_a_library); }),
             Catch::Contains("cannot be loaded") && Catch::Contains("not_a_library"));
  std::remove(not_a_library.c_str());

  CHECK_THAT(error_of([] { load_tuner_plugin(PACKTUNE_TEST_PLUGIN_NONE); }),
             Catch::Contains("registers no tuner") && Catch::Contains("PACKTUNE_REGISTER_TUNER"));
  CHECK_THAT(error_of([] { load_tuner_plugin(PACKTUNE_TEST_PLUGIN_DUPLICATE); }),
             Catch::Contains("\"random\" is registered twice"));
  CHECK_THAT(error_of([] { load_tuner_plugin(PACKTUNE_TEST_PLUGIN_STALE); }),
             Catch::Contains("version " + std::to_string(packtune::tuners::kTunerInterfaceVersion - 1) + " of packtune's tuner interface") && Catch::Contains("rebuild the plugin"));
  CHECK_FALSE(TunerRegistry::instance().contains("stale_random"));
  CHECK_THROWS_AS(load_tuner_plugin(PACKTUNE_TEST_PLUGIN_NONE), packtune::InputError);
  // The built-in is untouched.
  CHECK(TunerRegistry::instance().create("random", make_context(1, 2, 1))->name() == "random");
}

TEST_CASE("an unknown tuner name lists the known ones") {
  CHECK_THAT(error_of([] { TunerRegistry::instance().create("hyperbnd", make_context(1, 2, 1)); }),
             Catch::Contains("unknown tuner \"hyperbnd\"") && Catch::Contains("asha") &&
                 Catch::Contains("async_hyperband") && Catch::Contains("grid") &&
                 Catch::Contains("hyperband") && Catch::Contains("sha") &&
                 Catch::Contains("--tuner-plugin"));
}
