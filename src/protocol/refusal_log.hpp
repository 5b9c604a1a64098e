#pragma once
// Bounded logging of refused peers. A peer that is refused reconnects every few hundred
// milliseconds, and a hostile one can offer a new CURVE key or open a new connection each
// time: one line per refusal (or per distinct key, remembered forever) let 300 random keys add
// 300 lines and a set that only grew. Here the first refusal after a quiet interval is logged
// at once; the rest are counted and logged as one line per interval, naming a few of the
// distinct keys seen and how many there were (counted up to a bound, then "at least").
#include <chrono>
#include <cstdint>
#include <set>
#include <string>

namespace packtune::protocol {

class RefusalLog {
 public:
  using Clock = std::chrono::steady_clock;

  // `what` completes "refused N ...", e.g. "peer(s) whose CURVE key is not in DIR/authorized_actors".
  RefusalLog(std::string what, Clock::duration interval = std::chrono::seconds(10));

  // One refusal; `key` names the peer (a key, an address), "" when nothing does.
  void refuse(const std::string& key, Clock::time_point now);
  // Logs the refusals counted since the last line once the interval has passed: call it
  // now and then, so that the last of a burst are logged even if no refusal follows.
  void flush(Clock::time_point now);

  std::int64_t total() const { return total_; }
  std::int64_t lines() const { return lines_; }

  static constexpr std::size_t kMaxDistinct = 1000;  // distinct keys counted per interval
  static constexpr std::size_t kShownKeys = 3;       // of them named in a line

 private:
  void log_line(Clock::time_point now);

  std::string what_;
  Clock::duration interval_;
  bool logged_once_ = false;
  Clock::time_point last_line_{};
  std::int64_t pending_ = 0;  // refusals since the last line
  std::int64_t total_ = 0;
  std::int64_t lines_ = 0;
  std::set<std::string> distinct_;  // this interval's keys, at most kMaxDistinct
  bool distinct_full_ = false;
};

}  // namespace packtune::protocol
