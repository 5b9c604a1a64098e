#include "cli/profile_command.hpp"

#include <cstdio>
#include <iostream>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "util/subcommand.hpp"
#include "driver/profile_cache.hpp"
#include "packtune/error.hpp"
#include "util/printable.hpp"

namespace packtune::cli {

namespace po = boost::program_options;

namespace {

std::string milliseconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f ms", seconds * 1e3);
  return text;
}

void print_table(const ProfileCache& cache) {
  const auto& entries = cache.entries();
  std::printf("%zu throughput profile(s) in %s\n", entries.size(), cache.file().c_str());
  const ProfileCache::Context* last = nullptr;
  for (const auto& e : entries) {
    // Grouped under their context, which is long and shared by most entries.
    if (!last || last->device_model != e.context.device_model || last->build != e.context.build ||
        last->data != e.context.data) {
      // What actors reported, so never raw to a terminal.
      std::printf("\n%s\n  %s\n  data: %s\n", util::printable(e.context.device_model, 200).c_str(),
                  util::printable(e.context.build, 200).c_str(), util::printable(e.context.data, 200).c_str());
      last = &e.context;
    }
    std::string steps;  // step time by unit size
    for (const auto& [members, seconds] : e.points) {
      steps += (steps.empty() ? "" : ", ") + std::to_string(members) + ": " + milliseconds(seconds);
    }
    std::printf("  %-40s %s  (measured %s)\n", util::printable(e.shape, 200).c_str(), steps.c_str(),
                util::printable(e.measured, 40).c_str());
  }
}

}  // namespace

int run_profile_command(const std::vector<std::string>& args) {
  util::Subcommand command("profile", "packtune profile [--json] | packtune profile --clear [--device TEXT]");
  command.options()
      ("json", "print the cache's entries as JSON")
      ("clear", "remove the cached profiles (all, or those of --device)")
      ("device", po::value<std::string>(), "with --clear: only the profiles of device models containing TEXT");
  if (!command.parse(args)) return 0;
  const auto& vm = command.values();
  const auto dir = ProfileCache::default_dir();
  if (dir.empty()) throw InputError("profile: no cache folder: set PACKTUNE_CACHE_DIR, XDG_CACHE_HOME or HOME");
  if (vm.count("device") && !vm.count("clear")) throw InputError("profile: --device goes with --clear");
  ProfileCache cache(dir);
  if (vm.count("clear")) {
    const auto filter = vm.count("device") ? vm["device"].as<std::string>() : std::string();
    const auto removed = cache.clear(filter);
    std::printf("removed %zu throughput profile(s)%s from %s\n", removed,
                filter.empty() ? "" : (" of devices matching \"" + filter + "\"").c_str(), cache.file().c_str());
    return 0;
  }
  if (const auto why = cache.open(); !why.empty()) {
    throw InputError("profile: " + why + "; `packtune profile --clear` empties it");
  }
  if (vm.count("json")) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& e : cache.entries()) {
      nlohmann::json points = nlohmann::json::array();
      for (const auto& [members, seconds] : e.points) points.push_back({{"members", members}, {"seconds", seconds}});
      out.push_back({{"device_model", e.context.device_model}, {"build", e.context.build}, {"data", e.context.data},
                     {"shape", e.shape}, {"points", points}, {"max_members", e.max_members}, {"measured", e.measured}});
    }
    std::cout << nlohmann::json{{"file", cache.file()}, {"profiles", out}}.dump(1) << "\n";
    return 0;
  }
  print_table(cache);
  return 0;
}

}  // namespace packtune::cli
