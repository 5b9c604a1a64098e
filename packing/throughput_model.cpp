#include "packing/throughput_model.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "packtune/error.hpp"

namespace packtune::packing {

std::string device_class(const std::string& device) { return device.substr(0, device.find(':')); }

namespace {

std::string_view kind_of(const std::string& device) {
  return std::string_view(device).substr(0, device.find(':'));
}

}  // namespace

ThroughputModel::ThroughputModel(double prior_step_overhead_seconds, double prior_device_flops,
                                 double prior_cpu_step_overhead_seconds)
    : overhead_(prior_step_overhead_seconds),
      cpu_overhead_(prior_cpu_step_overhead_seconds < 0 ? prior_step_overhead_seconds : prior_cpu_step_overhead_seconds),
      flops_(prior_device_flops) {}

void ThroughputModel::record(const std::string& device, const TrialShape& shape, StepProfile profile) {
  std::sort(profile.begin(), profile.end());
  profile.erase(std::remove_if(profile.begin(), profile.end(),
                               [](const auto& p) { return p.first < 1 || !(p.second > 0) || !std::isfinite(p.second); }),
                profile.end());
  if (profile.empty()) throw Error("a throughput profile of shape " + shape.key + " has no valid step time");
  tables_[device_class(device)][shape.key] = Table{shape, std::move(profile)};
}

bool ThroughputModel::profiled(const std::string& device, const std::string& key) const {
  if (device.empty()) {
    return std::any_of(tables_.begin(), tables_.end(), [&](const auto& kind) { return kind.second.count(key) > 0; });
  }
  auto d = tables_.find(kind_of(device));
  return d != tables_.end() && d->second.count(key) > 0;
}

bool ThroughputModel::covered(const std::string& device, const TrialShape& shape) const {
  return table_for(device, shape) != nullptr;
}

StepProfile ThroughputModel::profile(const std::string& device, const std::string& key) const {
  auto d = tables_.find(kind_of(device));
  if (d == tables_.end()) return {};
  auto t = d->second.find(key);
  return t == d->second.end() ? StepProfile{} : t->second.points;
}

bool ThroughputModel::fusion_ruled_out(const std::string& device, const TrialShape& shape, double min_gain) const {
  if (shape.fusion.empty()) return false;
  auto d = tables_.find(kind_of(device));
  if (d == tables_.end()) return false;
  return std::any_of(d->second.begin(), d->second.end(), [&](const auto& entry) {
    const Table& t = entry.second;
    if (t.shape.fusion != shape.fusion || t.shape.flops_per_sample > shape.flops_per_sample) return false;
    // Only a measured pair decides: a profile that stopped at one member (max_pack 1, or two
    // did not fit in memory) says nothing about fusing.
    if (t.points.size() < 2 || t.points[0].first != 1 || t.points[1].first != 2) return false;
    const double gain = (2 / t.points[1].second) / (1 / t.points[0].second) - 1;
    return gain < min_gain;
  });
}

const ThroughputModel::Table* ThroughputModel::table_for(const std::string& device, const TrialShape& shape) const {
  auto lookup = [&](const std::map<std::string, Table>& tables) -> const Table* {
    auto exact = tables.find(shape.key);
    if (exact != tables.end()) return &exact->second;
    // A shape it fuses with, the nearest in work per sample.
    const Table* best = nullptr;
    double best_distance = 0;
    for (const auto& [key, table] : tables) {
      if (table.shape.fusion.empty() || table.shape.fusion != shape.fusion) continue;
      const double d = std::abs(std::log(std::max<double>(1, table.shape.flops_per_sample) /
                                         std::max<double>(1, shape.flops_per_sample)));
      if (!best || d < best_distance) {
        best = &table;
        best_distance = d;
      }
    }
    return best;
  };
  if (tables_.empty()) return nullptr;
  if (!device.empty()) {
    auto d = tables_.find(kind_of(device));
    return d == tables_.end() ? nullptr : lookup(d->second);
  }
  for (const auto& [kind, tables] : tables_) {
    if (const auto* t = lookup(tables)) return t;
  }
  return nullptr;
}

double ThroughputModel::interpolate(const StepProfile& points, double members) {
  if (points.size() == 1) {
    // One point says nothing about fusion: assume it does not pay.
    return points.front().second * members / points.front().first;
  }
  auto segment = [&](std::size_t i) {  // the line through points i and i+1
    const auto& [k0, t0] = points[i];
    const auto& [k1, t1] = points[i + 1];
    const double slope = std::max(0.0, (t1 - t0) / (k1 - k0));
    return std::make_pair(t0, slope);
  };
  std::size_t i = 0;
  while (i + 2 < points.size() && members > points[i + 1].first) ++i;
  const auto [t0, slope] = segment(i);
  const double t = t0 + slope * (members - points[i].first);
  // Below the first point the line may reach zero; a step never costs less than nothing.
  return std::max(t, 1e-3 * points.front().second);
}

double ThroughputModel::prior_step_seconds(const TrialShape& shape, int members, const std::string& device) const {
  const double flops = 3.0 * static_cast<double>(shape.flops_per_sample) * shape.batch_size;
  return (kind_of(device) == "cpu" ? cpu_overhead_ : overhead_) + std::max(1, members) * flops / flops_;
}

double ThroughputModel::step_seconds(const std::string& device, const TrialShape& shape, int members) const {
  members = std::max(1, members);
  const Table* table = table_for(device, shape);
  if (!table) return prior_step_seconds(shape, members, device);
  if (table->shape.key == shape.key) return interpolate(table->points, members);
  // Another width of the same architecture: as many member-equivalents of the profiled
  // shape as the FLOPs say (a fused step's cost follows its total work).
  const double scale = static_cast<double>(std::max<std::int64_t>(1, shape.flops_per_sample)) /
                       static_cast<double>(std::max<std::int64_t>(1, table->shape.flops_per_sample));
  return interpolate(table->points, members * scale);
}

}  // namespace packtune::packing
