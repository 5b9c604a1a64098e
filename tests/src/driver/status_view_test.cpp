#include <catch2/catch.hpp>

#include "driver/status_view.hpp"

using namespace packtune;

namespace {

StatusSnapshot sample() {
  StatusSnapshot s;
  s.experiment = "fashion_mnist";
  s.tuner = "hyperband";
  s.metric = "val_accuracy";
  s.elapsed_seconds = 83;
  s.remaining_seconds = 130;
  s.queued = 12;
  s.running = 3;
  s.paused = 5;
  s.finished = 4;
  s.failed = 1;
  s.jobs_done = 31;
  s.best = StatusSnapshot::Best{7, 0.87164, 2.25, R"({"lr":0.0031,"width":256})"};
  StatusSnapshot::Actor a0{0, "node-1", "cpu", true, {{3, 7, 9}, {12}}, 212 << 20, 600 << 20};
  StatusSnapshot::Actor a1{1, "node-1", "cpu", true, {}, 0, 600 << 20};
  StatusSnapshot::Actor a2{2, "node-2", "cuda:0", false, {}, 0, 0};
  s.actors = {a2, a1, a0};
  s.rungs = {{0.25, 17, 0}, {0.75, 6, 2}, {2.25, 1, 1}};
  return s;
}

}  // namespace

TEST_CASE("the table shows states, the best, the rungs and each actor's pack, busiest first") {
  const auto lines = render_status_table(sample(), 120);
  REQUIRE(lines.size() == 9);
  CHECK(lines[0] == "== fashion_mnist (hyperband) | 1m 23s elapsed, about 2m 10s left ==");
  CHECK(lines[1] == "trials: 3 running, 12 queued, 5 paused, 4 finished, 1 failed; 31 jobs done");
  CHECK(lines[2] == "best: trial 7 val_accuracy 0.8716 at budget 2.25");
  CHECK(lines[3] == R"(  config: {"lr":0.0031,"width":256})");
  CHECK(lines[4] == "rungs: | 0.25: 17 reached | 0.75: 6 reached, 2 training | 2.25: 1 reached, 1 training");
  CHECK_THAT(lines[5], Catch::StartsWith("actor host   device memory (planned)"));
  CHECK(lines[6] == "0     node-1 cpu    212/600 MiB  35%       [3 7 9] 12");
  CHECK(lines[7] == "1     node-1 cpu    0/600 MiB   0%         idle");
  CHECK(lines[8] == "2     node-2 cuda:0 0 MiB                  (gone)");
}

TEST_CASE("the table fits the terminal and sums up the actors it does not show") {
  auto s = sample();
  for (int i = 3; i < 40; ++i) s.actors.push_back({i, "host", "cpu", true, {}, 0, 0});
  const auto lines = render_status_table(s, 50, 4);
  for (const auto& line : lines) CHECK(line.size() <= 50);
  CHECK(lines.back() == "... and 36 more actors: 0 training, 35 idle, 1 ...");
  const auto wide = render_status_table(s, 200, 4);
  CHECK(wide.back() == "... and 36 more actors: 0 training, 35 idle, 1 gone");
}

TEST_CASE("the plain line has everything but the actors' packs; unknown time left says so") {
  auto s = sample();
  s.remaining_seconds.reset();
  s.best.reset();
  s.elapsed_seconds = 3725;
  CHECK(render_status_line(s) ==
        "[1h 02m, time left unknown] 3 running, 12 queued, 5 paused, 4 finished, 1 failed; 31 jobs done; "
        "best: none yet; 1 of 2 live actors training");
  CHECK(format_duration(42.4) == "42s");
  CHECK(format_duration(59.6) == "1m 00s");
}
