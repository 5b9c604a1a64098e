// load_bench's experiment, written for the driver and simulated for the minimum.
#include "bench/load_bench/experiment.hpp"

#include "tuners/search_space.hpp"
#include "tuners/simulate/objective.hpp"
#include "tuners/tuner_registry.hpp"

namespace packtune::bench {

using json = nlohmann::json;

json experiment_config(const Options& o, const std::string& endpoint, const std::string& data_dir) {
  json budget = {{"unit", "steps"}, {"min", o.min_budget}, {"max", o.max_budget}};
  if (o.report_every > 0) budget["report_every"] = o.report_every;
  return {
      {"name", "load_bench"},
      {"seed", o.seed},
      {"metric", "val_accuracy"},
      {"budget", budget},
      {"tuner", {{"name", "asha"}, {"trials", o.trials}, {"eta", o.eta}, {"sampler", o.sampler}}},
      // The actors are this process's sockets; the driver starts none.
      {"actors", 0},
      {"listen", endpoint},
      {"heartbeat_seconds", o.heartbeat_seconds},
      // One trial per actor, each a plain model: no throughput profiles, no fused units, so
      // a job is one Assign and its reports and the minimum is a plain makespan.
      {"max_pack", 1},
      {"fuse", "never"},
      // Answered as a real actor answers it: its own memory, not a share of the machine's.
      {"actor_memory", "16GiB"},
      // Simulated actors hold no model to test at the end.
      {"evaluate_test", false},
      {"data", {{"name", "fashion-mnist"}, {"dir", data_dir}, {"validation_size", 10}}},
      {"model", {{"family", "mlp"}, {"depth", 2}, {"batch_size", 128}}},
      {"space",
       {{"lr", {{"type", "loguniform"}, {"low", 1e-4}, {"high", 3e-2}}},
        {"dropout", {{"type", "uniform"}, {"low", 0.0}, {"high", 0.4}}},
        {"width", {{"type", "choice"}, {"values", {64, 128, 256}}}},
        {"optimizer", {{"type", "choice"}, {"values", {"adam", "sgd"}}}}}},
  };
}

tuners::TunerContext tuner_context(const Options& o, const json& config) {
  tuners::TunerContext c;
  c.space = tuners::SearchSpace::from_json(config.at("space"));
  c.metric = "val_accuracy";
  c.mode = tuners::Mode::Max;
  c.min_budget = o.min_budget;
  c.max_budget = o.max_budget;
  c.max_trials = o.trials;
  c.seed = o.seed;
  c.settings = {{"eta", o.eta}, {"sampler", o.sampler}};
  return c;
}

tuners::SimulationSummary simulate_schedule(const Options& o, const tuners::TunerContext& context) {
  auto tuner = tuners::TunerRegistry::instance().create("asha", context);
  auto objective = tuners::make_objective(o.objective, context);
  tuners::SimulationOptions sim;
  sim.workers = o.actors;
  sim.report_every = o.report_every;
  return tuners::Simulator(*tuner, *objective, context.mode, sim).run();
}

}  // namespace packtune::bench
