#include "driver/live_report.hpp"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <mutex>

#include <spdlog/spdlog.h>

#include "experiment/report_page.hpp"
#include "experiment/results_folder.hpp"
#include "packtune/error.hpp"

namespace packtune {
namespace {

// At most this often. A rewrite reads every file of the run again, so it also waits ten times
// as long as the last one took: a driver with 100,000 trials spends a tenth of a core on it at most.
constexpr auto kInterval = std::chrono::seconds(5);
constexpr int kSlowdown = 10;
// The first page comes sooner, so a user can open it as soon as the run has started.
constexpr auto kFirst = std::chrono::seconds(2);
// Free space the journal and checkpoints keep while the run goes on: the report never takes
// the last of the disk. On a volume smaller than four times this, a quarter of it (a 64 MiB
// volume that holds the whole run must get its page too). The final page keeps nothing: the
// run's files are written by then, and a page that does not fit is a warning.
constexpr std::uintmax_t kKeepFree = 256ull << 20;

std::uintmax_t keep_free_while_running(const std::string& dir) {
  std::error_code ec;
  const auto space = std::filesystem::space(dir, ec);
  return ec ? kKeepFree : std::min(kKeepFree, space.capacity / 4);
}
// Past this much of results.jsonl and journal.jsonl together (some 12,000 reports) the driver
// stops writing the page, at the end too: building it holds some 30 times the files in
// memory (2.2 GB for load_bench's 145,000 reports, and 45% more driver CPU per message), and
// the driver's memory must stay small however large the experiment. `packtune report DIR`
// writes it afterwards, in a process of its own.
constexpr std::uintmax_t kDriverLimit = 8ull << 20;

std::uintmax_t size_of(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  return ec ? 0 : size;
}

}  // namespace

struct LiveReport::Shared {
  std::atomic<bool> busy{false};
  std::mutex mutex;
  LiveReport::Clock::duration took{};
  std::string last_warning;  // each distinct failure is logged once, not every 5 s
};

LiveReport::LiveReport(std::string dir, std::function<bool()> still_ours)
    : dir_(std::move(dir)), still_ours_(std::move(still_ours)), shared_(std::make_shared<Shared>()),
      next_(Clock::now() + kFirst) {}

LiveReport::~LiveReport() { join(); }

void LiveReport::join() {
  if (worker_.joinable()) worker_.join();
}

bool LiveReport::write(const std::string& dir, bool live, Shared& shared,
                       const std::function<bool()>& still_ours) {
  const auto start = Clock::now();
  std::string warning;
  try {
    // A folder deleted or replaced under the run is someone else's now (the driver stops).
    if (!still_ours()) throw Error(dir + " is no longer the run's folder");
    if (size_of(results_folder::path(dir, results_folder::kResults)) +
            size_of(results_folder::path(dir, results_folder::kJournal)) >
        kDriverLimit) {
      throw Error(std::string(results_folder::kResults) + " and " + std::string(results_folder::kJournal) +
                  " are over " + std::to_string(kDriverLimit >> 20) +
                  " MiB, too large for the driver to rewrite the page; run `packtune report " + dir +
                  "` once the experiment ends");
    }
    report::write_report(dir, "", live, live ? keep_free_while_running(dir) : 0);
  } catch (const std::exception& e) {  // Error, or bad_alloc on a huge run: the run goes on
    warning = e.what();
  }
  std::lock_guard<std::mutex> lock(shared.mutex);
  shared.took = Clock::now() - start;
  if (!warning.empty() && warning != shared.last_warning) spdlog::warn("report.html not written: {}", warning);
  shared.last_warning = warning;
  return warning.empty();
}

void LiveReport::tick(Clock::time_point now) {
  if (now < next_ || shared_->busy.load()) return;
  join();
  Clock::duration took;
  {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    took = shared_->took;
  }
  next_ = now + std::max<Clock::duration>(kInterval, kSlowdown * took);
  shared_->busy = true;
  worker_ = std::thread([dir = dir_, shared = shared_, still_ours = still_ours_] {
    // The lowest priority, for this thread alone (Linux's nice is per thread): on a machine
    // whose cores the actors fill, the page waits, not the driver's loop or the training.
    ::setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), 19);
    write(dir, true, *shared, still_ours);
    shared->busy = false;
  });
}

bool LiveReport::finish() {
  join();
  return write(dir_, false, *shared_, still_ours_);
}

}  // namespace packtune
