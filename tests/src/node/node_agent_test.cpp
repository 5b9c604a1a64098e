#include <catch2/catch.hpp>

#include "node/node_agent.hpp"
#include "packtune/error.hpp"
#include "util/host_name.hpp"

using namespace packtune;

TEST_CASE("a node's GPUs come from --gpus, else CUDA_VISIBLE_DEVICES, else there are none") {
  CHECK(node_gpus("0,2", "5") == std::vector<std::string>{"0", "2"});
  CHECK(node_gpus("", " 1, GPU-5d1c ") == std::vector<std::string>{"1", "GPU-5d1c"});
  CHECK(node_gpus("", nullptr).empty());
  CHECK(node_gpus("", "").empty());
  CHECK_THROWS_AS(node_gpus("0,,1", nullptr), InputError);
  CHECK_THROWS_WITH(node_gpus("", "0,"), Catch::Contains("CUDA_VISIBLE_DEVICES"));
}

TEST_CASE("a node describes its machine: cores, memory, one device per GPU it was given") {
  const auto cpu = describe_machine({}, 3);
  CHECK(cpu.host == util::host_name());
  CHECK(cpu.actors == 3);
  CHECK(cpu.cores >= 1);
  CHECK(cpu.memory_bytes > (std::int64_t{64} << 20));
  CHECK(cpu.devices.empty());
  // Without nvidia-smi's rows a GPU keeps its name as given and an unknown memory.
  const auto unseen = describe_machine({"no-such-gpu"}, 1, {});
  REQUIRE(unseen.devices.size() == 1);
  CHECK(unseen.devices[0].name == "no-such-gpu");
  CHECK(unseen.devices[0].memory_bytes == 0);
  // With them, by index or UUID, and a GPU they do not list is refused.
  const std::vector<std::vector<std::string>> rows{{"0", "GPU-aa", "NVIDIA H200", "143771"},
                                                   {"1", "GPU-bb", "NVIDIA H200", "[N/A]"}};
  const auto seen = describe_machine({"GPU-aa", "1"}, 2, rows);
  REQUIRE(seen.devices.size() == 2);
  CHECK(seen.devices[0].name == "NVIDIA H200");
  CHECK(seen.devices[0].memory_bytes == std::int64_t{143771} << 20);
  CHECK(seen.devices[1].memory_bytes == 0);
  CHECK_THROWS_WITH(describe_machine({"2"}, 1, rows), Catch::Contains("not one nvidia-smi lists here (0, 1)"));
}
