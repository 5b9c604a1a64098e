#pragma once
// What the driver shows while an experiment runs: a snapshot of its state, drawn as a table
// (a terminal, redrawn in place by StatusDisplay) or as one plain line (logs, Slurm output).
// Pure functions of the snapshot, so what the user sees is tested without a terminal.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tuners/tuner.hpp"

namespace packtune {

struct StatusSnapshot {
  std::string experiment;
  std::string tuner;
  std::string metric;
  double elapsed_seconds = 0;
  std::optional<double> remaining_seconds;  // nullopt: the tuner cannot say

  // Trials by state.
  int queued = 0;
  int running = 0;
  int paused = 0;    // below the max budget and not running: waiting for a promotion, or not promoted
  int finished = 0;  // reached the max budget
  int failed = 0;
  std::int64_t jobs_done = 0;

  struct Best {
    tuners::TrialId trial = -1;
    double value = 0;
    double budget = 0;
    std::string config;  // JSON
  };
  std::optional<Best> best;

  struct Actor {
    int id = -1;
    std::string host;
    std::string device;
    bool live = true;
    std::vector<std::vector<tuners::TrialId>> units;  // its pack: each unit's trials (fused if more than one)
    std::int64_t memory_bytes = 0;                     // the planner's estimate of what the pack holds
    std::int64_t capacity_bytes = 0;                   // 0: unknown
  };
  std::vector<Actor> actors;

  // Each budget a job trains to, with how many trials reached it and how many train to it now.
  struct Rung {
    double budget = 0;
    int reached = 0;
    int running = 0;
  };
  std::vector<Rung> rungs;
};

// "1h 02m", "3m 05s", "42s".
std::string format_duration(double seconds);

// The table, at most `width` columns and about `max_actor_rows` actors (the busiest first;
// the rest summed up in one line).
std::vector<std::string> render_status_table(const StatusSnapshot& status, std::size_t width,
                                             std::size_t max_actor_rows = 16);

// One line for logs: elapsed, time left, trials by state, the best so far.
std::string render_status_line(const StatusSnapshot& status);

}  // namespace packtune
