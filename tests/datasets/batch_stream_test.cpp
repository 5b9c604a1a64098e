// BatchStream over any data set: per-channel and per-feature statistics, regression targets,
// and augmented crops and flips checked against every crop a loop over the padded image makes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>

#include "datasets/batch_stream.hpp"
#include "packtune/error.hpp"

using namespace packtune;
using namespace packtune::datasets;

namespace {

// Images of three channels whose means differ (about 40, 120 and 200 of 255).
Dataset colour_images(std::uint32_t n, std::uint32_t side) {
  Dataset d;
  d.count = n;
  d.sample_shape = {3, side, side};
  d.classes = 4;
  for (std::uint32_t i = 0; i < n; ++i) {
    d.labels.push_back(i % 4);
    for (std::uint32_t c = 0; c < 3; ++c) {
      for (std::uint32_t p = 0; p < side * side; ++p) d.x.push_back(static_cast<std::uint8_t>(40 + 80 * c + (i * 7 + p * 3) % 31));
    }
  }
  return d;
}

// Rows of D features on unlike scales, with T regression targets each.
Dataset regression_rows(std::uint32_t n, std::uint32_t features, std::uint32_t targets) {
  Dataset d;
  d.count = n;
  d.sample_shape = {features};
  d.x_type = ElementType::Float32;
  d.task = Task::Regression;
  d.target_size = targets;
  std::vector<float> x;
  for (std::uint32_t i = 0; i < n; ++i) {
    for (std::uint32_t f = 0; f < features; ++f) x.push_back(static_cast<float>((f + 1) * 10) * static_cast<float>((i * 13 + f * 5) % 17) + f);
    for (std::uint32_t t = 0; t < targets; ++t) d.targets.push_back(static_cast<float>(i) * 0.5f + t);
  }
  d.x.resize(x.size() * sizeof(float));
  std::memcpy(d.x.data(), x.data(), d.x.size());
  return d;
}

DataSplit same_twice(const Dataset& d) { return {d, d}; }

}  // namespace

TEST_CASE("images are standardised per channel with the training split's statistics") {
  BatchStream stream(same_twice(colour_images(64, 6)), torch::kCPU, 1);
  CHECK(stream.images());
  CHECK(stream.sample_shape() == std::vector<std::int64_t>{3, 6, 6});
  CHECK(stream.outputs() == 4);
  const auto& x = stream.validation_inputs();
  REQUIRE(x.sizes() == torch::IntArrayRef{64, 3, 6, 6});
  const auto mean = x.mean({0, 2, 3});
  const auto std = x.std({0, 2, 3});
  for (int c = 0; c < 3; ++c) {
    CHECK(mean[c].item<double>() == Approx(0).margin(1e-5));
    CHECK(std[c].item<double>() == Approx(1).epsilon(1e-4));
  }
  SECTION("without normalize, uint8 images are only scaled to [0, 1]") {
    BatchStream raw(same_twice(colour_images(64, 6)), torch::kCPU, 1, {false, {}});
    CHECK(raw.validation_inputs()[0][2][0][0].item<double>() == Approx((40 + 160 + 0) / 255.0));
  }
}

TEST_CASE("feature rows are standardised per feature; regression targets come as floats") {
  const auto d = regression_rows(50, 4, 2);
  BatchStream stream(same_twice(d), torch::kCPU, 3);
  CHECK_FALSE(stream.images());
  CHECK(stream.task() == Task::Regression);
  CHECK(stream.outputs() == 2);
  const auto& x = stream.validation_inputs();
  REQUIRE(x.sizes() == torch::IntArrayRef{50, 4});
  for (int f = 0; f < 4; ++f) {
    CHECK(x.select(1, f).mean().item<double>() == Approx(0).margin(1e-5));
    CHECK(x.select(1, f).std().item<double>() == Approx(1).epsilon(1e-4));
  }
  const auto& y = stream.validation_targets();
  REQUIRE(y.sizes() == torch::IntArrayRef{50, 2});
  CHECK(y.scalar_type() == torch::kFloat32);
  CHECK(y[7][1].item<float>() == 3.5f + 1);
  auto [bx, by] = stream.batch(0, 8);
  CHECK(bx.sizes() == torch::IntArrayRef{8, 4});
  CHECK(by.sizes() == torch::IntArrayRef{8, 2});
  // A batch's targets are those of its rows: target 0 is half the row's index, row i's
  // features are its own.
  const auto row = static_cast<std::uint32_t>(std::lround(by[3][0].item<float>() * 2));
  CHECK(bx[3][0].item<double>() == Approx(x[row][0].item<double>()).margin(1e-5));
}

TEST_CASE("crops and flips are drawn per trial and step, and each is a crop of the padded image") {
  const auto d = colour_images(40, 5);
  const int padding = 2;
  StreamOptions plain{false, {}};
  StreamOptions augmented{false, {padding, true, true}};
  BatchStream reference(same_twice(d), torch::kCPU, 9, plain);
  BatchStream stream(same_twice(d), torch::kCPU, 9, augmented);

  auto [original, labels] = reference.batch(1, 16, 77);
  auto [crops, crop_labels] = stream.batch(1, 16, 77);
  CHECK(torch::equal(labels, crop_labels));  // the same samples, in the same order
  REQUIRE(crops.sizes() == original.sizes());

  // The oracle: every shift within the padding, mirrored or not, of the zero-padded image.
  const auto padded = torch::constant_pad_nd(original, {padding, padding, padding, padding}, 0);
  int flipped = 0, shifted = 0;
  for (int i = 0; i < 16; ++i) {
    bool found = false;
    for (int dy = 0; dy <= 2 * padding && !found; ++dy) {
      for (int dx = 0; dx <= 2 * padding && !found; ++dx) {
        const auto window = padded[i].narrow(1, dy, 5).narrow(2, dx, 5);
        for (bool flip : {false, true}) {
          const auto candidate = flip ? window.flip({2}) : window;
          if (torch::equal(candidate, crops[i])) {
            found = true;
            flipped += flip && !torch::equal(window, window.flip({2}));
            shifted += dy != padding || dx != padding;
            break;
          }
        }
      }
    }
    INFO("sample " << i);
    CHECK(found);
  }
  // Drawn, not fixed: some images moved and some were mirrored.
  CHECK(flipped > 0);
  CHECK(shifted > 0);

  SECTION("the same trial and step draw the same; another trial or step draws anew") {
    BatchStream again(same_twice(d), torch::kCPU, 9, augmented);
    CHECK(torch::equal(again.batch(1, 16, 77).first, crops));
    CHECK_FALSE(torch::equal(stream.batch(1, 16, 78).first, crops));
    auto [next, next_labels] = stream.batch(1 + 40 / 16, 16, 77);  // the next epoch's batch 1
    CHECK_FALSE(torch::equal(next, crops));
  }
  SECTION("with per_trial off, every trial reads one draw, decoded once") {
    BatchStream shared(same_twice(d), torch::kCPU, 9, {false, {padding, true, false}});
    const auto before = shared.batches_decoded();
    auto first = shared.batch(1, 16, 77).first;
    auto second = shared.batch(1, 16, 78).first;
    CHECK(torch::equal(first, second));
    CHECK(shared.batches_decoded() == before + 1);
  }
}

TEST_CASE("augmenting feature rows is refused") {
  CHECK_THROWS_AS(BatchStream(same_twice(regression_rows(20, 3, 1)), torch::kCPU, 1, {true, {4, false, true}}),
                  InputError);
}

TEST_CASE("with order per_trial each trial reads its own order, alike alone or beside others") {
  // Regression rows whose first target is half the row's index: a batch names its rows.
  const auto d = regression_rows(64, 2, 1);
  const int batch = 8;  // 8 batches an epoch
  const auto rows_of = [](BatchStream& s, std::int64_t step, std::uint64_t trial) {
    auto t = s.batch(step, batch, trial).second.select(1, 0).mul(2).round().to(torch::kInt64);
    return std::vector<std::int64_t>(t.data_ptr<std::int64_t>(), t.data_ptr<std::int64_t>() + t.numel());
  };
  const auto epoch_of = [&](BatchStream& s, std::int64_t epoch, std::uint64_t trial) {
    std::vector<std::int64_t> all;
    for (std::int64_t k = 0; k < 8; ++k) {
      s.begin_round();
      const auto rows = rows_of(s, epoch * 8 + k, trial);
      all.insert(all.end(), rows.begin(), rows.end());
    }
    return all;
  };
  const auto every_row_once = [](std::vector<std::int64_t> rows) {
    std::sort(rows.begin(), rows.end());
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (rows[i] != static_cast<std::int64_t>(i)) return false;
    }
    return rows.size() == 64;
  };
  StreamOptions own{false, {}, true};
  BatchStream stream(same_twice(d), torch::kCPU, 5, own);
  const auto a0 = epoch_of(stream, 0, 11), b0 = epoch_of(stream, 0, 12), a1 = epoch_of(stream, 1, 11);
  CHECK(every_row_once(a0));
  CHECK(every_row_once(b0));
  CHECK(every_row_once(a1));
  CHECK(a0 != b0);  // neighbouring trial seeds, unrelated orders
  CHECK(a0 != a1);  // and a new order each epoch
  CHECK(a1 != b0);  // not one sequence of orders that trials enter at different epochs

  SECTION("a trial reads the same rows alone as beside others, and again after its epoch was dropped") {
    BatchStream alone(same_twice(d), torch::kCPU, 5, own);
    BatchStream crowded(same_twice(d), torch::kCPU, 5, own);
    for (std::int64_t step = 0; step < 24; ++step) {
      crowded.begin_round();
      for (std::uint64_t other = 20; other < 26; ++other) rows_of(crowded, step + other % 3, other);
      const auto rows = rows_of(crowded, step, 11);
      alone.begin_round();
      CHECK(rows_of(alone, step, 11) == rows);
    }
    // Epochs 0 to 3 of seven trials went through the cache, at most two of each held at once.
    CHECK(crowded.permutations_held() <= 14);
    // Trial 11's epoch 0 was dropped and comes back alike.
    CHECK(epoch_of(crowded, 0, 11) == a0);
    // The other trials, no longer read, are dropped once trial 11 needs a new epoch's order.
    for (std::int64_t epoch = 4; epoch < 7; ++epoch) {
      crowded.begin_round();
      rows_of(crowded, epoch * 8, 11);
    }
    CHECK(crowded.permutations_held() == 2);
  }
  SECTION("each member's batch is decoded for it alone") {
    const auto before = stream.batches_decoded();
    stream.begin_round();
    rows_of(stream, 3, 11);
    rows_of(stream, 3, 12);
    rows_of(stream, 3, 11);
    CHECK(stream.batches_decoded() == before + 2);
  }
  SECTION("the shared order is one for every trial, and another than a trial's own") {
    BatchStream shared(same_twice(d), torch::kCPU, 5, {false, {}});
    const auto s0 = epoch_of(shared, 0, 11);
    CHECK(every_row_once(s0));
    CHECK(epoch_of(shared, 0, 12) == s0);
    CHECK(s0 != a0);
  }
}

TEST_CASE("a reader shares a stream's data with an order of its own, and leaves the stream's batches alone") {
  const auto d = regression_rows(64, 2, 1);
  BatchStream stream(same_twice(d), torch::kCPU, 5);
  stream.begin_round();
  const auto first = stream.batch(0, 8).second.clone();
  const auto decoded = stream.batches_decoded();

  auto reader = stream.reader(9);
  // As a stream of its own seed over the same data reads, batch for batch.
  BatchStream oracle(same_twice(d), torch::kCPU, 9);
  for (std::int64_t step = 0; step < 12; ++step) {
    reader.begin_round();
    oracle.begin_round();
    CHECK(torch::equal(reader.batch(step, 8).first, oracle.batch(step, 8).first));
  }
  CHECK(reader.batches_decoded() == 12);
  // The stream neither decoded more nor lost its round's batch.
  CHECK(stream.batches_decoded() == decoded);
  CHECK(torch::equal(stream.batch(0, 8).second, first));
  CHECK(stream.batches_decoded() == decoded);
}
