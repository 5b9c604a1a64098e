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
  // A GPU nvidia-smi does not know keeps its name as given and an unknown memory.
  const auto gpus = describe_machine({"no-such-gpu"}, 1);
  REQUIRE(gpus.devices.size() == 1);
  CHECK(gpus.devices[0].name == "no-such-gpu");
  CHECK(gpus.devices[0].memory_bytes == 0);
}
