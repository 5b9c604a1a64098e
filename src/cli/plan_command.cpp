#include "cli/plan_command.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "experiment/experiment_config.hpp"
#include "packing/planner.hpp"
#include "cli/command_line.hpp"
#include "packtune/error.hpp"
#include "experiment/trial_shape.hpp"
#include "tuners/plugin_loader.hpp"
#include "tuners/tuner_registry.hpp"

namespace packtune::cli {
namespace {

namespace po = boost::program_options;

// "cpu=600MiB,cuda:0=80GiB" or "1000x16GiB" (devices from the config).
std::vector<packing::ActorSpec> parse_actors(const std::string& text, const ExperimentConfig& config) {
  std::vector<packing::ActorSpec> actors;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const auto end = std::min(text.find(',', begin), text.size());
    const auto item = text.substr(begin, end - begin);
    const auto eq = item.find('=');
    const auto x = item.find('x');
    if (eq != std::string::npos) {
      packing::ActorSpec a;
      a.id = static_cast<int>(actors.size());
      a.device = item.substr(0, eq);
      if (a.device.empty()) throw InputError("--actors: \"" + item + "\" names no device; expected DEVICE=SIZE");
      a.capacity_bytes = parse_byte_size(item.substr(eq + 1), "--actors " + item);
      actors.push_back(a);
    } else if (x != std::string::npos && x > 0) {
      int count = 0;
      try {
        std::size_t used = 0;
        count = std::stoi(item.substr(0, x), &used);
        if (used != x) count = 0;
      } catch (const std::exception&) {
      }
      if (count < 1 || count > 1000000) {
        throw InputError("--actors: \"" + item + "\": expected COUNTxSIZE with a count from 1 to 1000000");
      }
      const auto bytes = parse_byte_size(item.substr(x + 1), "--actors " + item);
      for (int i = 0; i < count; ++i) {
        packing::ActorSpec a;
        a.id = static_cast<int>(actors.size());
        a.device = config.device;
        a.capacity_bytes = bytes;
        actors.push_back(a);
      }
    } else {
      throw InputError("--actors: \"" + item + "\": expected DEVICE=SIZE (cpu=600MiB) or COUNTxSIZE (1000x16GiB)");
    }
    begin = end + 1;
  }
  return actors;
}

// The data set every actor holds before its first trial: training images as bytes,
// validation images as floats (datasets::BatchStream).
std::int64_t data_bytes(const ExperimentConfig& config, const InputDims& dims, std::int64_t train) {
  const std::int64_t image = std::int64_t{dims.channels} * dims.height * dims.width;
  return train * image + std::int64_t{config.data.validation_size} * image * 4;
}

}  // namespace

int run_plan_command(const std::vector<std::string>& args) {
  po::options_description options("packtune plan CONFIG [options]");
  options.add_options()
    ("help,h", "show this help")
    ("config", po::value<std::string>(), "the experiment's JSON config")
    ("trials", po::value<std::int64_t>(), "trials to plan (default: the config's)")
    ("actors", po::value<std::string>(), "actors as DEVICE=SIZE,... or COUNTxSIZE (default: this machine)")
    ("max-pack", po::value<int>(), "trials per actor at most (default: the config's max_pack)")
    ("tuner-plugin", po::value<std::string>(), "a shared library with more tuners")
    ("json", "print the plan as JSON");
  po::positional_options_description positional;
  positional.add("config", 1);
  const auto vm = parse_command_line("plan", args, options, positional);
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  if (!vm.count("config")) throw InputError("plan: missing CONFIG; usage: packtune plan CONFIG [--trials N] [--actors SPEC] [--json]");
  if (vm.count("tuner-plugin")) tuners::load_tuner_plugin(vm["tuner-plugin"].as<std::string>());
  auto config = load_config(vm["config"].as<std::string>());
  if (!config.tuner_plugin.empty() && !vm.count("tuner-plugin")) tuners::load_tuner_plugin(config.tuner_plugin);
  Overrides overrides;
  if (vm.count("trials")) overrides.trials = vm["trials"].as<std::int64_t>();
  if (vm.count("max-pack")) overrides.max_pack = vm["max-pack"].as<int>();
  apply_overrides(config, overrides);

  const InputDims dims;
  std::vector<packing::ActorSpec> actors;
  if (vm.count("actors")) {
    actors = parse_actors(vm["actors"].as<std::string>(), config);
  } else {
    // This machine: the config's actors share its memory (CPU); a GPU's size is unknown here.
    const auto available = config.device == "cpu" ? available_memory_bytes() : 0;
    for (int i = 0; i < config.actors; ++i) {
      packing::ActorSpec a;
      a.id = i;
      a.device = config.device;
      a.capacity_bytes = config.actor_memory > 0 ? config.actor_memory : available / config.actors;
      actors.push_back(a);
    }
  }
  // From the training file's header: data sets other than Fashion-MNIST's 60,000 images plan right.
  const std::int64_t train = datasets::train_images(config.data);
  for (auto& a : actors) {
    a.base_bytes = data_bytes(config, dims, train);
    a.max_members = config.max_pack;
    a.max_units = packing::units_per_actor(packing::parse_mixed_packs(config.mixed_packs), a.device);
  }

  // The first rung: every job the tuner hands out before it has to wait for a result.
  auto tuner = tuners::TunerRegistry::instance().create(config.tuner, tuner_context(config));
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
      const auto spec = actors::parse_trial_spec(full, "trial");
      trials.push_back({job.trial, trial_shape(spec, dims, fuse_pads_widths(config)), job_steps(config, train, job.budget, spec.batch_size)});
    } catch (const InputError& e) {
      packing::Unplaced u;
      u.demand.trial = job.trial;
      u.reason = std::string("invalid config: ") + e.what();
      invalid.push_back(u);
    }
  }

  packing::PlanOptions plan_options;
  plan_options.fuse = packing::parse_fuse_mode(config.fuse);
  plan_options.headroom = 0.1;
  packing::Planner planner({}, plan_options);
  planner.memory_model().set_scale(config.memory_estimate_scale);
  auto plan = planner.plan(actors, trials);
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
