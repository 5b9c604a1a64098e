#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <hdf5.h>

#include "actors/checkpoint_file.hpp"
#include "packtune/error.hpp"
#include "../temp_dir.hpp"

using namespace packtune;
using namespace packtune::actors;
using packtune::testing::TempDir;

namespace {

StoredTensor floats(const std::string& name, std::vector<std::int64_t> shape, float first) {
  StoredTensor t;
  t.name = name;
  t.shape = std::move(shape);
  t.bytes = TensorBytes(static_cast<std::size_t>(t.elements()) * 4);
  auto* values = reinterpret_cast<float*>(t.bytes.data());
  for (std::int64_t i = 0; i < t.elements(); ++i) values[i] = first + 0.25f * static_cast<float>(i);
  return t;
}

TrialCheckpoint sample() {
  TrialCheckpoint c;
  c.trial = 7;
  c.budget = 1.5;
  c.step = 42;
  c.seed = 0xfeedbeefcafeULL;
  c.config = {{"lr", 0.01}, {"depth", 2}, {"optimizer", "adam"}};
  c.metrics = nlohmann::json::array({{{"budget", 1.5}, {"step", 42}, {"val_loss", 0.5}}});
  c.optimizer = "adam";
  c.optimizer_steps = 42;
  c.train_loss_sum = 0.125;
  c.train_loss_count = 3;
  c.model.push_back(floats("0.weight", {3, 4}, 1000.0f));
  c.model.push_back(floats("0.bias", {3}, -1.0f));
  StoredTensor tracked;
  tracked.name = "1.num_batches_tracked";
  tracked.type = TensorType::Int64;
  tracked.bytes = TensorBytes(8);
  const std::int64_t count = 42;
  std::memcpy(tracked.bytes.data(), &count, 8);
  c.model.push_back(tracked);
  c.optimizer_state.push_back(floats("0.weight/exp_avg", {3, 4}, 0.5f));
  c.optimizer_state.push_back(floats("0.weight/exp_avg_sq", {3, 4}, 0.75f));
  c.optimizer_state.push_back(floats("0.bias/exp_avg", {3}, 0.0f));
  c.optimizer_state.push_back(floats("0.bias/exp_avg_sq", {3}, 2.0f));
  return c;
}

bool same_bytes(const StoredTensor& a, const StoredTensor& b) {
  return a.name == b.name && a.type == b.type && a.shape == b.shape && a.bytes.size() == b.bytes.size() &&
         std::memcmp(a.bytes.data(), b.bytes.data(), a.bytes.size()) == 0;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Edits a checkpoint in place with HDF5, as another tool (or a bad disk) might.
template <class Edit>
void edit(const std::string& path, Edit edit) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  REQUIRE(file >= 0);
  edit(file);
  H5Fclose(file);
}

}  // namespace

TEST_CASE("a checkpoint reads back exactly as written") {
  TempDir dir;
  const auto path = checkpoint_path(dir.path().string(), 7, 1.5);
  CHECK(std::filesystem::path(path).filename() == "trial-7-budget-1.5.h5");
  const auto written = sample();
  write_checkpoint(path, written);
  const auto read = read_checkpoint(path);
  CHECK(read.trial == 7);
  CHECK(read.budget == 1.5);
  CHECK(read.step == 42);
  CHECK(read.seed == written.seed);
  CHECK(read.config == written.config);
  CHECK(read.metrics == written.metrics);
  CHECK(read.optimizer == "adam");
  CHECK(read.optimizer_steps == 42);
  CHECK(read.train_loss_sum == 0.125);
  CHECK(read.train_loss_count == 3);
  REQUIRE(read.model.size() == written.model.size());
  for (const auto& t : written.model) {
    const auto* r = read.find_model(t.name);
    REQUIRE(r != nullptr);
    CHECK(same_bytes(*r, t));
  }
  REQUIRE(read.optimizer_state.size() == written.optimizer_state.size());
  const auto* exp_avg = read.find_optimizer("0.weight", "exp_avg");
  REQUIRE(exp_avg != nullptr);
  CHECK(same_bytes(*exp_avg, written.optimizer_state[0]));
  CHECK(read.bytes() == written.bytes());
}

TEST_CASE("a checkpoint is written through a temporary file and replaced atomically") {
  TempDir dir;
  const auto path = dir.file("c.h5");
  auto c = sample();
  write_checkpoint(path, c);
  c.budget = 2;
  write_checkpoint(path, c);
  CHECK(read_checkpoint(path).budget == 2);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    ++files;
    CHECK(entry.path().filename() == "c.h5");
  }
  CHECK(files == 1);
  CHECK_THROWS_AS(write_checkpoint(dir.file("no/such/dir/c.h5"), c), Error);
}

TEST_CASE("a flipped byte in a tensor is detected") {
  TempDir dir;
  const auto path = dir.file("c.h5");
  write_checkpoint(path, sample());
  auto bytes = slurp(path);
  // 0.weight's first value, 1000.0f, is unique in the file.
  const float marker = 1000.0f;
  const auto at = bytes.find(std::string(reinterpret_cast<const char*>(&marker), 4));
  REQUIRE(at != std::string::npos);
  bytes[at + 1] ^= 0x10;
  spit(path, bytes);
  CHECK_THROWS_WITH(read_checkpoint(path), Catch::Contains("/model/0.weight is corrupt"));
}

TEST_CASE("edits by another tool are detected: values, attributes, datasets") {
  TempDir dir;
  const auto path = dir.file("c.h5");
  SECTION("rewritten values") {
    write_checkpoint(path, sample());
    edit(path, [](hid_t file) {
      const hid_t ds = H5Dopen2(file, "/optimizer/0.bias/exp_avg", H5P_DEFAULT);
      const float values[3] = {9, 9, 9};
      H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values);
      H5Dclose(ds);
    });
    CHECK_THROWS_WITH(read_checkpoint(path), Catch::Contains("/optimizer/0.bias/exp_avg is corrupt"));
  }
  SECTION("a changed attribute fails the root checksum") {
    write_checkpoint(path, sample());
    edit(path, [](hid_t file) {
      const hid_t attr = H5Aopen(file, "budget", H5P_DEFAULT);
      const double budget = 3;
      H5Awrite(attr, H5T_NATIVE_DOUBLE, &budget);
      H5Aclose(attr);
    });
    CHECK_THROWS_WITH(read_checkpoint(path), Catch::Contains("root checksum does not match"));
  }
  SECTION("a missing dataset") {
    write_checkpoint(path, sample());
    edit(path, [](hid_t file) { H5Ldelete(file, "/model/0.bias", H5P_DEFAULT); });
    CHECK_THROWS_WITH(read_checkpoint(path), Catch::Contains("a dataset is missing"));
  }
}

TEST_CASE("truncated, foreign, non-HDF5 and missing files are refused with one clear error") {
  TempDir dir;
  const auto path = dir.file("c.h5");
  write_checkpoint(path, sample());
  const auto bytes = slurp(path);

  SECTION("truncated") {
    for (std::size_t keep : {bytes.size() / 2, bytes.size() - 1, std::size_t{600}}) {
      spit(path, bytes.substr(0, keep));
      CHECK_THROWS_AS(read_checkpoint(path), InputError);
    }
    spit(path, bytes.substr(0, bytes.size() / 2));
    CHECK_THROWS_WITH(read_checkpoint(path), Catch::Contains("truncated or corrupt"));
  }
  SECTION("foreign HDF5") {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    const auto foreign = dir.file("foreign.h5");
    const hid_t file = H5Fcreate(foreign.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t dims[1] = {4};
    const hid_t space = H5Screate_simple(1, dims, nullptr);
    const hid_t ds = H5Dcreate2(file, "data", H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(ds);
    H5Sclose(space);
    H5Fclose(file);
    CHECK_THROWS_WITH(read_checkpoint(foreign), Catch::Contains("not a packtune checkpoint"));
  }
  SECTION("not HDF5") {
    spit(path, "{\"trial\": 7}\n");
    CHECK_THROWS_WITH(read_checkpoint(path), Catch::Contains("not an HDF5 file"));
    spit(path, "");
    CHECK_THROWS_AS(read_checkpoint(path), InputError);
  }
  SECTION("missing") {
    CHECK_THROWS_WITH(read_checkpoint(dir.file("none.h5")), Catch::Contains("no such file"));
    CHECK_THROWS_WITH(read_checkpoint(dir.path().string()), Catch::Contains("no such file"));
  }
}
