#include <catch2/catch.hpp>

#include <iostream>
#include <sstream>
#include <stdexcept>

#include "packtune/error.hpp"
#include "util/subcommand.hpp"

using namespace packtune;
namespace po = boost::program_options;

TEST_CASE("a command line is parsed into its options, and a malformed one names the command and its help") {
  po::options_description options;
  options.add_options()("threads", po::value<int>()->default_value(0), "")("driver", po::value<std::string>(), "");
  po::positional_options_description positional;
  positional.add("driver", 1);
  const auto vm = util::parse_command_line("actor", {"--threads", "3", "tcp://host:5555"}, options, positional);
  CHECK(vm["threads"].as<int>() == 3);
  CHECK(vm["driver"].as<std::string>() == "tcp://host:5555");
  CHECK_THROWS_AS(util::parse_command_line("actor", {"--no-such-flag"}, options), InputError);
  CHECK_THROWS_WITH(util::parse_command_line("actor", {"--threads", "many"}, options),
                    Catch::StartsWith("actor: ") && Catch::EndsWith("; see packtune actor --help"));
}

TEST_CASE("a command's exit code: its own, 2 after bad input, 1 after any other failure") {
  CHECK(util::exit_code_of([] { return 0; }) == 0);
  CHECK(util::exit_code_of([] { return 3; }) == 3);
  CHECK(util::exit_code_of([]() -> int { throw InputError("bad"); }) == 2);
  CHECK(util::exit_code_of([]() -> int { throw Error("failed"); }) == 1);
  CHECK(util::exit_code_of([]() -> int { throw std::runtime_error("failed"); }) == 1);
  CHECK(util::exit_code_of([]() -> int { throw 42; }) == 1);
}

TEST_CASE("a subcommand prints its help, and a missing argument names what was expected and the usage") {
  util::Subcommand command("inspect", "packtune inspect FILE.h5 [--json]");
  command.positional("file", "FILE", "a trial checkpoint");
  command.options()("json", "print JSON");
  CHECK(command.parse({"run.h5", "--json"}));
  CHECK(command.argument() == "run.h5");
  CHECK(command.has("json"));

  util::Subcommand bare("inspect", "packtune inspect FILE.h5 [--json]");
  bare.positional("file", "FILE", "a trial checkpoint");
  CHECK(bare.parse({}));
  CHECK_THROWS_WITH(bare.argument(), "inspect: missing FILE; usage: packtune inspect FILE.h5 [--json]");
  CHECK_THROWS_WITH(bare.require("json", "--json"), "inspect: missing --json; usage: packtune inspect FILE.h5 [--json]");

  util::Subcommand told("report", "packtune report DIR");
  told.positional("dir", "DIR", "a run's folder", "the --out of a packtune run");
  CHECK(told.parse({}));
  CHECK_THROWS_AS(told.argument(), InputError);
  CHECK_THROWS_WITH(told.argument(), "report: missing DIR; the --out of a packtune run");

  util::Subcommand helped("keys", "packtune keys DIR");
  std::ostringstream out;
  auto* old = std::cout.rdbuf(out.rdbuf());
  const bool go_on = helped.parse({"--help"});
  std::cout.rdbuf(old);
  CHECK_FALSE(go_on);
  CHECK_THAT(out.str(), Catch::StartsWith("usage: packtune keys DIR\n\noptions:") && Catch::Contains("--help"));
}
