#pragma once
// The data behind report.html (report_page.hpp): one JSON object built from an experiment's
// files, DIR/results.jsonl (required), DIR/config.json, DIR/journal.jsonl and DIR/best.json
// (each optional), shaped for the charts so that the page's JavaScript only draws. The
// driver builds it while the run goes on, so a torn last line of results.jsonl or the
// journal (a write in progress) is left out rather than refused.
//
// The object (docs/report.md has the reasoning):
//   name, tuner, metric, mode ("max" | "min"), max_budget, budget_unit, space (the config's),
//   finished (the journal says the experiment ended), elapsed (the last report's wall time),
//   best {trial, value, budget, config, test?} or null,
//   trials:   [{trial, config, budgets[], values[], wall_times[], reached, value, best_value, bracket, jobs,
//               actors[], state: "finished" | "running" | "paused" | "stopped" | "failed",
//               why (the sampler's reasons for its config, null for a random draw),
//               and under population-based training, for a trial that exploited another:
//               exploits [{budget, from_trial, from_budget}] and schedule [{from, config}]}], by id;
//   brackets: [{start, rungs: [{budget, trials[], values[], promoted[], training}]}], by start;
//   segments: [{actor, trial, unit, unit_size, start, end, from, to}]: a job's time on an actor;
//   best_over_time: [{wall_time, value, trial, budget}]: each report that improved the best.
#include <string>

#include <nlohmann/json.hpp>

namespace packtune::report {

// Throws InputError (packtune/error.hpp) when `dir` is no experiment's output or a file in it
// is damaged, with the line number and what to do.
nlohmann::json build_report_data(const std::string& dir);

}  // namespace packtune::report
