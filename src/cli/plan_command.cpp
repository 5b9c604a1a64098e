#include "cli/plan_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "cli/actor_launch.hpp"
#include "experiment/actor_groups.hpp"
#include "experiment/experiment_config.hpp"
#include "experiment/planner_setup.hpp"
#include "experiment/trial_shape.hpp"
#include "packing/planner.hpp"
#include "packtune/error.hpp"
#include "tuners/plugins/plugin_loader.hpp"
#include "tuners/tuner_registry.hpp"
#include "util/subcommand.hpp"

namespace packtune::cli {

namespace po = boost::program_options;

int run_plan_command(const std::vector<std::string>& args) {
  util::Subcommand command("plan", "packtune plan CONFIG [--trials N] [--actors SPEC] [--json]");
  command.positional("config", "CONFIG", "the experiment's JSON config");
  command.options()
    ("trials", po::value<std::int64_t>(), "trials to plan (default: the config's)")
    ("actors", po::value<std::string>(), "actors as [COUNTx]DEVICE=SIZE, COUNTxSIZE, COUNTxDEVICE or COUNT, comma-separated (default: the config's local actors)")
    ("max-pack", po::value<int>(), "trials per actor at most (default: the config's max_pack)")
    ("tuner-plugin", po::value<std::string>(), "a shared library with more tuners")
    ("model-plugin", po::value<std::string>(), "a shared library with more model families")
    ("json", "print the plan as JSON");
  if (!command.parse(args)) return 0;
  const auto& vm = command.values();
  const auto config_path = command.argument();
  if (vm.count("tuner-plugin")) tuners::load_tuner_plugin(vm["tuner-plugin"].as<std::string>());
  auto config = load_config(config_path);
  if (!config.tuner_plugin.empty() && !vm.count("tuner-plugin")) tuners::load_tuner_plugin(config.tuner_plugin);
  Overrides overrides;
  if (vm.count("trials")) overrides.trials = vm["trials"].as<std::int64_t>();
  if (vm.count("max-pack")) overrides.max_pack = vm["max-pack"].as<int>();
  if (vm.count("model-plugin")) overrides.model_plugin = std::vector<std::string>{vm["model-plugin"].as<std::string>()};
  apply_overrides(config, overrides);
  if (!config.model_plugin.empty()) declare_model_plugin(config.model_plugin);

  validate(config);
  const auto setup = planner_setup(config);

  const spec::InputShape dims = input_dims(config);
  // From the data files' headers: data sets other than Fashion-MNIST's 60,000 images plan right.
  const std::int64_t train = datasets::train_examples(config.data);
  const auto actors = planned_actors(
      config, setup, vm.count("actors") ? parse_actor_groups(vm["actors"].as<std::string>()) : std::vector<ActorGroup>{},
      static_cast<std::int64_t>(datasets::actor_data_bytes(config.data, datasets::data_shape(config.data))));

  // The first rung: every job the tuner hands out before it has to wait for a result.
  auto tuner = tuners::TunerRegistry::instance().create(config.tuner, tuner_context(config));
  for (const auto& warning : tuner->warnings()) std::cerr << "packtune: warning: " << warning << "\n";
  std::vector<packing::TrialDemand> trials;
  std::vector<packing::Unplaced> invalid;
  // A limit of 0 (a whole Hyperband sweep) ends where the tuner first waits for results.
  const auto limit = trial_limit(config);
  while (limit == 0 || static_cast<std::int64_t>(trials.size() + invalid.size()) < limit) {
    const auto job = tuner->next_job();
    if (job.kind != tuners::Job::Kind::Start) break;
    auto full = config.model;
    for (const auto& [k, v] : job.config) full[k] = v;
    try {
      const auto spec = spec::parse_trial_spec(full, "trial");
      trials.push_back({job.trial, trial_shape(spec, dims, fuse_pads_widths(config)), job_steps(config, train, job.budget, spec.batch_size)});
    } catch (const InputError& e) {
      packing::Unplaced u;
      u.demand.trial = job.trial;
      u.reason = std::string("invalid config: ") + e.what();
      invalid.push_back(u);
    }
  }

  const auto& plan_options = setup.options;
  const auto planner = make_planner(config, setup);
  auto plan = planner.plan(actors, trials);
  // The planner's "waits for room" means memory; where every actor already trains all the
  // units mixed_packs lets it (a CPU actor: one), a trial waits for a unit to end instead.
  const bool units_taken = !plan.actors.empty() && std::all_of(plan.actors.begin(), plan.actors.end(), [](const auto& a) {
    return static_cast<int>(a.units.size()) >= a.actor.max_units;
  });
  for (auto& u : plan.unplaced) {
    if (u.waits && units_taken) {
      u.reason = "waits for an actor to finish its unit: each trains one unit at a time (\"mixed_packs\": \"" +
                 to_string(config.mixed_packs) + "\") and has one";
    }
  }
  plan.unplaced.insert(plan.unplaced.end(), invalid.begin(), invalid.end());

  if (vm.count("json")) {
    nlohmann::json out;
    out["actors"] = nlohmann::json::array();
    for (const auto& a : plan.actors) {
      nlohmann::json actor{{"id", a.actor.id},
                           {"device", a.actor.device},
                           {"capacity_bytes", a.actor.capacity_bytes},
                           {"usable_bytes", a.actor.capacity_bytes > 0
                                                ? static_cast<std::int64_t>(a.actor.capacity_bytes * (1 - plan_options.headroom))
                                                : 0},
                           {"base_bytes", a.actor.base_bytes},
                           {"estimated_bytes", a.estimated_bytes},
                           {"estimated_seconds", a.estimated_seconds},
                           {"packs", nlohmann::json::array()}};
      for (const auto& u : a.units) {
        nlohmann::json members = nlohmann::json::array();
        for (const auto& m : u.members) members.push_back(m.trial);
        actor["packs"].push_back({{"members", members},
                                  {"fused", u.fused()},
                                  {"shape", u.shape.key},
                                  {"estimated_bytes", u.estimate.peak()},
                                  {"persistent_bytes", u.estimate.persistent},
                                  {"transient_bytes", u.estimate.transient}});
      }
      out["actors"].push_back(actor);
    }
    out["unplaced"] = nlohmann::json::array();
    for (const auto& u : plan.unplaced) out["unplaced"].push_back({{"trial", u.demand.trial}, {"reason", u.reason}});
    std::cout << out.dump() << "\n";
    return 0;
  }
  std::printf("plan for %zu first-rung trials of %s on %zu actor(s); memory in MiB (estimated / usable)\n",
              trials.size() + invalid.size(), config.name.c_str(), plan.actors.size());
  for (const auto& a : plan.actors) {
    const auto usable = a.actor.capacity_bytes > 0 ? (static_cast<std::int64_t>(a.actor.capacity_bytes * (1 - plan_options.headroom)) >> 20) : -1;
    std::printf("actor %d (%s): %d trial(s), %lld / %s MiB, ~%.1f s of work\n", a.actor.id, a.actor.device.c_str(),
                a.members(), static_cast<long long>(a.estimated_bytes >> 20),
                usable < 0 ? "?" : std::to_string(usable).c_str(), a.estimated_seconds);
    for (const auto& u : a.units) {
      std::string ids;
      for (const auto& m : u.members) ids += (ids.empty() ? "" : " ") + std::to_string(m.trial);
      std::printf("  %s %s: trials %s (%lld MiB)\n", u.fused() ? "fused" : "solo ", u.shape.key.c_str(), ids.c_str(),
                  static_cast<long long>(u.estimate.peak() >> 20));
    }
  }
  for (const auto& u : plan.unplaced) std::printf("unplaced trial %lld: %s\n", static_cast<long long>(u.demand.trial), u.reason.c_str());
  return 0;
}

}  // namespace packtune::cli
