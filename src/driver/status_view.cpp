#include "driver/status_view.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace packtune {
namespace {

std::string fit(std::string text, std::size_t width) {
  if (text.size() <= width) return text;
  if (width <= 3) return text.substr(0, width);
  return text.substr(0, width - 3) + "...";
}

std::string mib(std::int64_t bytes) { return fmt::format("{:.0f}", static_cast<double>(bytes) / (1 << 20)); }

std::string memory_cell(const StatusSnapshot::Actor& a) {
  if (a.capacity_bytes <= 0) return mib(a.memory_bytes) + " MiB";
  return fmt::format("{}/{} MiB {:3.0f}%", mib(a.memory_bytes), mib(a.capacity_bytes),
                     100.0 * static_cast<double>(a.memory_bytes) / static_cast<double>(a.capacity_bytes));
}

// "[3 7 9] 12": a fused unit in brackets, a trial training alone as its number.
std::string pack_cell(const StatusSnapshot::Actor& a) {
  if (!a.live) return "(gone)";
  if (a.units.empty()) return "idle";
  std::string out;
  for (const auto& unit : a.units) {
    if (!out.empty()) out += ' ';
    if (unit.size() == 1) {
      out += std::to_string(unit.front());
      continue;
    }
    out += '[';
    for (std::size_t i = 0; i < unit.size(); ++i) out += (i ? " " : "") + std::to_string(unit[i]);
    out += ']';
  }
  return out;
}

int members(const StatusSnapshot::Actor& a) {
  int n = 0;
  for (const auto& unit : a.units) n += static_cast<int>(unit.size());
  return n;
}

std::string time_left(const StatusSnapshot& s) {
  return s.remaining_seconds ? "about " + format_duration(*s.remaining_seconds) + " left" : "time left unknown";
}

std::string trial_counts(const StatusSnapshot& s) {
  return fmt::format("{} running, {} queued, {} paused, {} finished, {} failed; {} jobs done", s.running,
                     s.queued, s.paused, s.finished, s.failed, s.jobs_done);
}

std::string best_text(const StatusSnapshot& s) {
  if (!s.best) return "best: none yet";
  return fmt::format("best: trial {} {} {:.4f} at budget {:g}", s.best->trial, s.metric, s.best->value,
                     s.best->budget);
}

}  // namespace

std::string format_duration(double seconds) {
  const auto total = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  if (total >= 3600) return fmt::format("{}h {:02}m", total / 3600, total / 60 % 60);
  if (total >= 60) return fmt::format("{}m {:02}s", total / 60, total % 60);
  return fmt::format("{}s", total);
}

std::vector<std::string> render_status_table(const StatusSnapshot& s, std::size_t width,
                                             std::size_t max_actor_rows) {
  width = std::max<std::size_t>(width, 40);
  std::vector<std::string> lines;
  auto add = [&](std::string line) { lines.push_back(fit(std::move(line), width)); };
  add(fmt::format("== {} ({}) | {} elapsed, {} ==", s.experiment, s.tuner, format_duration(s.elapsed_seconds),
                  time_left(s)));
  add("trials: " + trial_counts(s));
  add(best_text(s));
  if (s.best) add("  config: " + s.best->config);
  if (!s.rungs.empty()) {
    std::string rungs = "rungs:";
    for (const auto& r : s.rungs) {
      rungs += fmt::format(" | {:g}: {} reached", r.budget, r.reached);
      if (r.running > 0) rungs += fmt::format(", {} training", r.running);
    }
    add(rungs);
  }
  if (s.actors.empty()) {
    add("actors: none joined yet");
    return lines;
  }
  // The busiest first; gone actors last.
  std::vector<const StatusSnapshot::Actor*> order;
  for (const auto& a : s.actors) order.push_back(&a);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    if (a->live != b->live) return a->live;
    return members(*a) > members(*b);
  });
  std::size_t host_width = 4, device_width = 6;
  const std::size_t shown = std::min(order.size(), max_actor_rows);
  for (std::size_t i = 0; i < shown; ++i) {
    host_width = std::max(host_width, std::min<std::size_t>(order[i]->host.size(), 16));
    device_width = std::max(device_width, order[i]->device.size());
  }
  add(fmt::format("{:<5} {:<{}} {:<{}} {:<22} {}", "actor", "host", host_width, "device", device_width,
                  "memory (planned)", "pack: [fused unit] or trial alone"));
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& a = *order[i];
    add(fmt::format("{:<5} {:<{}} {:<{}} {:<22} {}", a.id, fit(a.host, host_width), host_width, a.device,
                    device_width, memory_cell(a), pack_cell(a)));
  }
  if (order.size() > shown) {
    int busy = 0, idle = 0, gone = 0;
    for (std::size_t i = shown; i < order.size(); ++i) {
      (!order[i]->live ? gone : order[i]->units.empty() ? idle : busy) += 1;
    }
    add(fmt::format("... and {} more actors: {} training, {} idle, {} gone", order.size() - shown, busy, idle,
                    gone));
  }
  return lines;
}

std::string render_status_line(const StatusSnapshot& s) {
  std::string line = fmt::format("[{}, {}] {}; {}", format_duration(s.elapsed_seconds), time_left(s),
                                 trial_counts(s), best_text(s));
  int live = 0, busy = 0;
  for (const auto& a : s.actors) {
    live += a.live;
    busy += a.live && !a.units.empty();
  }
  return line + fmt::format("; {} of {} live actors training", busy, live);
}

}  // namespace packtune
