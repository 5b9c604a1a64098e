#include "cli/inspect_command.hpp"

#include <cstdio>
#include <iostream>
#include <sstream>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "actors/checkpoint_file.hpp"
#include "actors/checkpoint_verify.hpp"
#include "util/subcommand.hpp"
#include "packtune/error.hpp"

namespace packtune::cli {
namespace {

namespace po = boost::program_options;
using ordered = nlohmann::ordered_json;

struct Row {
  std::string path;
  const actors::StoredTensor* tensor;
};

std::vector<Row> rows(const actors::TrialCheckpoint& c) {
  std::vector<Row> out;
  for (const auto& t : c.model) out.push_back({"/model/" + t.name, &t});
  for (const auto& t : c.optimizer_state) out.push_back({"/optimizer/" + t.name, &t});
  return out;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::ostringstream s;
  s << "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  s << "]";
  return s.str();
}

void print_text(const std::string& path, const actors::TrialCheckpoint& c) {
  std::printf("checkpoint %s (format %lld, checksums verified)\n", path.c_str(),
              static_cast<long long>(actors::kCheckpointFormatVersion));
  std::printf("trial %lld, budget %g, step %lld, seed %llu\n", static_cast<long long>(c.trial), c.budget,
              static_cast<long long>(c.step), static_cast<unsigned long long>(c.seed));
  std::printf("optimizer %s, %lld steps\n", c.optimizer.c_str(), static_cast<long long>(c.optimizer_steps));
  std::printf("config: %s\n", c.config.dump().c_str());
  std::printf("metrics:%s\n", c.metrics.empty() ? " none" : "");
  for (const auto& report : c.metrics) {
    std::ostringstream line;
    line << "  budget " << report.value("budget", 0.0);
    for (const auto& [name, value] : report.items()) {
      if (name == "budget" || name == "step") continue;
      line << "  " << name << " " << (value.is_number() ? std::to_string(value.get<double>()) : value.dump());
    }
    std::printf("%s\n", line.str().c_str());
  }
  const auto all = rows(c);
  std::size_t width = 0;
  for (const auto& r : all) width = std::max(width, r.path.size());
  std::printf("tensors: %zu, %.2f MiB\n", all.size(), static_cast<double>(c.bytes()) / (1 << 20));
  for (const auto& r : all) {
    std::printf("  %-*s  %-7s %s\n", static_cast<int>(width), r.path.c_str(), actors::to_string(r.tensor->type),
                shape_text(r.tensor->shape).c_str());
  }
}

void print_json(const std::string& path, const actors::TrialCheckpoint& c) {
  ordered out;
  out["path"] = path;
  out["format_version"] = actors::kCheckpointFormatVersion;
  out["trial"] = c.trial;
  out["budget"] = c.budget;
  out["step"] = c.step;
  out["seed"] = c.seed;
  out["config"] = c.config;
  out["metrics"] = c.metrics;
  out["optimizer"] = {{"name", c.optimizer}, {"steps", c.optimizer_steps}};
  out["bytes"] = c.bytes();
  out["tensors"] = ordered::array();
  for (const auto& r : rows(c)) {
    out["tensors"].push_back({{"name", r.path}, {"dtype", actors::to_string(r.tensor->type)}, {"shape", r.tensor->shape}});
  }
  std::cout << out.dump(2) << "\n";
}

}  // namespace

int run_inspect_command(const std::vector<std::string>& args) {
  util::Subcommand command("inspect", "packtune inspect FILE.h5 [--json]");
  command.positional("file", "FILE", "a trial checkpoint (HDF5)");
  command.options()("json", "print one JSON object instead of text");
  if (!command.parse(args)) return 0;
  const auto& vm = command.values();
  const auto path = command.argument();
  // The file may come from anywhere: HDF5 first reads it in a child, which a damaged file may crash.
  actors::verify_checkpoint(path);
  const auto checkpoint = actors::read_checkpoint(path);
  if (vm.count("json")) {
    print_json(path, checkpoint);
  } else {
    print_text(path, checkpoint);
  }
  return 0;
}

}  // namespace packtune::cli
