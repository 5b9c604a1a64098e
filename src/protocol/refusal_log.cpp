#include "protocol/refusal_log.hpp"

#include <spdlog/spdlog.h>

namespace packtune::protocol {

RefusalLog::RefusalLog(std::string what, Clock::duration interval) : what_(std::move(what)), interval_(interval) {}

void RefusalLog::refuse(const std::string& key, Clock::time_point now) {
  ++pending_;
  ++total_;
  if (!key.empty()) {
    if (distinct_.size() < kMaxDistinct) {
      distinct_.insert(key);
    } else if (!distinct_.count(key)) {
      distinct_full_ = true;
    }
  }
  flush(now);
}

void RefusalLog::flush(Clock::time_point now) {
  if (pending_ == 0) return;
  if (logged_once_ && now - last_line_ < interval_) return;
  log_line(now);
}

void RefusalLog::log_line(Clock::time_point now) {
  std::string keys;
  if (!distinct_.empty()) {
    std::size_t shown = 0;
    for (const auto& key : distinct_) {
      if (shown == kShownKeys) break;
      keys += (shown++ ? ", " : "") + key;
    }
    const auto distinct = distinct_.size();
    if (distinct > shown || distinct_full_) {
      keys += " and " + std::string(distinct_full_ ? "at least " : "") + std::to_string(distinct - shown) + " more";
    }
    keys = "; " + keys;
  }
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(interval_).count();
  spdlog::warn("refused {} {}{} ({} in all; repeats are counted and logged at most every {} s)", pending_, what_, keys,
               total_, seconds);
  ++lines_;
  logged_once_ = true;
  last_line_ = now;
  pending_ = 0;
  distinct_.clear();
  distinct_full_ = false;
}

}  // namespace packtune::protocol
