#pragma once
// The driver's copy of `packtune report`: DIR/report.html rewritten during the run, so a
// browser can keep it open (the page reloads itself), and once more at the end. The page is
// built on a thread of its own from the files the driver has flushed, by the same code as the
// command (experiment/report_page.hpp); the loop only starts it and never waits for it,
// except at the end. A failure to write it is a warning, never the end of the run.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace packtune {

class LiveReport {
 public:
  using Clock = std::chrono::steady_clock;

  // `still_ours`: whether `dir` is still the run's folder (not deleted or replaced), asked
  // before each rewrite from the writing thread; it must be safe to call from there.
  LiveReport(std::string dir, std::function<bool()> still_ours);
  ~LiveReport();
  LiveReport(const LiveReport&) = delete;
  LiveReport& operator=(const LiveReport&) = delete;

  // Starts a rewrite when one is due and none is in progress. Cheap when none is due.
  void tick(Clock::time_point now);
  // Waits for a rewrite in progress, then writes the final page (it no longer reloads itself).
  // Returns whether it was written.
  bool finish();

 private:
  struct Shared;
  static bool write(const std::string& dir, bool live, Shared& shared, const std::function<bool()>& still_ours);
  void join();

  std::string dir_;
  std::function<bool()> still_ours_;
  std::shared_ptr<Shared> shared_;
  std::thread worker_;
  Clock::time_point next_;
};

}  // namespace packtune
