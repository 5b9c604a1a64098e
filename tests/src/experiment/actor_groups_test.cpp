// The --actors grammar of `packtune plan` and the actors the plan builds from it with the
// config's limits (planner_setup.hpp).
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "experiment/actor_groups.hpp"
#include "experiment/planner_setup.hpp"
#include "packtune/error.hpp"

using namespace packtune;

namespace {

std::string error_of(const std::string& text) {
  try {
    parse_actor_groups(text);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("every form of an actor group reads as written") {
  const auto one = [](const std::string& text) {
    const auto groups = parse_actor_groups(text);
    REQUIRE(groups.size() == 1);
    return groups.front();
  };
  auto g = one("4");
  CHECK(g.count == 4);
  CHECK(g.device.empty());
  CHECK(g.capacity_bytes == 0);
  g = one("1000x16GiB");
  CHECK(g.count == 1000);
  CHECK(g.device.empty());
  CHECK(g.capacity_bytes == 16LL << 30);
  g = one("1000xcuda=16GiB");  // this once planned one actor of device "1000xcuda"
  CHECK(g.count == 1000);
  CHECK(g.device == "cuda");
  CHECK(g.capacity_bytes == 16LL << 30);
  g = one("8xcuda:3");
  CHECK(g.count == 8);
  CHECK(g.device == "cuda:3");
  CHECK(g.capacity_bytes == 0);
  g = one("cpu=600MiB");
  CHECK(g.count == 1);
  CHECK(g.device == "cpu");
  CHECK(g.capacity_bytes == 600LL << 20);
  g = one("1000000x1.5GB");
  CHECK(g.count == 1000000);
  CHECK(g.capacity_bytes == 1500000000LL);
  CHECK(one("007xcpu=1KiB").count == 7);

  const auto list = parse_actor_groups("cpu=600MiB,cuda:0=80GiB,2xcuda=40GiB,3x1GiB,5,6xcpu");
  REQUIRE(list.size() == 6);
  CHECK(list[1].device == "cuda:0");
  CHECK(list[2].count == 2);
  CHECK(list[2].device == "cuda");
  CHECK(list[3].count == 3);
  CHECK(list[3].device.empty());
  CHECK(list[4].count == 5);
  CHECK(list[5].device == "cpu");
}

TEST_CASE("a malformed actor group is one InputError naming the grammar") {
  for (const char* bad : {"", ",", "4,", ",4", "0", "0x", "0x1GiB", "0xcuda=1GiB", "x", "xcuda", "xcuda=16GiB", "x16GiB",
                          "10x", "10xcuda=", "cuda=", "=1GiB", "cpu", "cuda:0", "-1", "-1x1GiB", "-1xcuda=1GiB",
                          "1000001", "1000001xcpu", "99999999999999999999999x1GiB", "4x-1GiB", "4x0GiB", "cpu=0",
                          "cpu=-5MiB", "3xlots", "4xgpu", "4xcuda:", "4xcuda:x", "4xauto", "auto=1GiB", "4x16GiBs",
                          "4xcuda=16GiB!", "cpu=16 GiB", "cpu= 16GiB", "4 x cpu", "4x1GiB extra", "cpu=0x10MiB",
                          "cpu=inf", "cpu=nanGiB", "cpu=1e300TiB", "cpu=0.1B", "4xcpu=1GiB=2GiB", "4xx1GiB",
                          "1.5xcpu", "1e3xcpu", "+4xcpu", "cuda=16GiB\nx", "4xcpu\x01"}) {
    INFO("--actors \"" << bad << "\"");
    const auto message = error_of(bad);
    CHECK(message.rfind("--actors: ", 0) == 0);
    CHECK(message.find("expected COUNT, COUNTxSIZE, COUNTxDEVICE, [COUNTx]DEVICE=SIZE") != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);  // the CLI's one line
  }
  CHECK(error_of("10xcuda=").find("no SIZE") != std::string::npos);
  CHECK(error_of("xcuda").find("no COUNT") != std::string::npos);
  CHECK(error_of("cpu").find("DEVICE alone") != std::string::npos);
  CHECK(error_of("3xlots").find("unknown DEVICE \"lots\"") != std::string::npos);
}

TEST_CASE("the counts of all groups stop at a million actors") {
  CHECK_NOTHROW(parse_actor_groups("500000x1GiB,500000xcuda=1GiB"));
  CHECK(error_of("500000x1GiB,500001xcuda=1GiB").find("more than 1000000 actors in all") != std::string::npos);
  // Many groups of one each: the total, not each count, gives out.
  std::string many = "1";
  for (int i = 0; i < 1000000; ++i) many += ",1";
  CHECK(error_of(many).find("more than 1000000 actors in all") != std::string::npos);
}

TEST_CASE("planned actors take the config's device, limits and default sizes") {
  ExperimentConfig config;
  config.device = "cpu";
  config.actors = 2;
  config.max_pack = 4;
  const auto setup = planner_setup(config);

  const auto local = planned_actors(config, setup, {}, 100);
  REQUIRE(local.size() == 2);
  CHECK(local[1].id == 1);
  CHECK(local[0].device == "cpu");
  CHECK(local[0].base_bytes == 100);
  CHECK(local[0].max_members == 4);
  CHECK(local[0].max_units == 1);  // mixed_packs auto: one unit per CPU actor, as a run has
  CHECK(local[0].capacity_bytes == local[1].capacity_bytes);

  // deterministic: one unit at a time on GPUs too (units side by side there do not repeat).
  auto deterministic = config;
  deterministic.deterministic = true;
  const auto one_unit = planned_actors(deterministic, planner_setup(deterministic), parse_actor_groups("2xcuda"), 0);
  CHECK(one_unit.at(0).max_units == 1);
  CHECK(planned_actors(config, setup, parse_actor_groups("2xcuda"), 0).at(0).max_units > 1);

  const auto gpus = planned_actors(config, setup, parse_actor_groups("1000xcuda=16GiB,2xcuda,3x1GiB"), 0);
  REQUIRE(gpus.size() == 1005);
  CHECK(gpus[999].device == "cuda");
  CHECK(gpus[999].capacity_bytes == 16LL << 30);
  CHECK(gpus[999].max_units > 1);
  CHECK(gpus[1001].capacity_bytes == 0);  // a GPU of unknown size
  CHECK(gpus[1004].device == "cpu");      // COUNTxSIZE: the config's device
  CHECK(gpus[1004].capacity_bytes == 1LL << 30);
  CHECK(gpus[1004].id == 1004);

  config.actor_memory = 600LL << 20;
  CHECK(planned_actors(config, setup, parse_actor_groups("3xcuda"), 0)[2].capacity_bytes == 600LL << 20);
  config.actors = 0;
  CHECK(planned_actors(config, setup, {}, 0).empty());
}

TEST_CASE("the planner set up from a config fuses on a CPU only when a profile says it pays") {
  ExperimentConfig config;
  config.max_pack = 8;
  const packing::Planner planner({}, planner_setup(config).options);
  packing::TrialShape s;
  s.key = "mlp";
  s.fusion = "mlp";
  s.parameters = 269322;
  s.largest_parameter = 784 * 256;
  s.activations_per_sample = 2852;
  s.flops_per_sample = 2 * (784 * 256 + 256 * 256 + 2560);
  s.batch_size = 128;
  // Before its profile a run holds a shape's trials; the plan shows what follows on a CPU.
  CHECK(planner.useful_members(s, "cpu") == 1);
  CHECK(planner.useful_members(s, "cuda:0") > 1);
  // A fuse other than auto, always or never no longer reaches planner_setup: it is an enum
  // now, and the parser refuses the word.
  CHECK_THROWS_AS(parse_config(nlohmann::json{{"fuse", "sometimes"}}, "x.json"), InputError);
}
