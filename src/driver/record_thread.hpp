#pragma once
// The thread that writes the driver's records: the lines of the journal and of results.jsonl
// are formatted and appended here, in the order the loop posted them, and made durable at
// each commit (the journal's fdatasync, then results.jsonl: driver/journal.hpp's order).
//
// Why a thread: at 10,000 actors the loop handles tens of thousands of reports a second, and
// formatting their rows and entries, writing them and waiting for the disk was a fifth of its
// time (docs/benchmarks.md, "Nodes"). The loop now copies a report's values into a task and
// goes on. One commit is in flight at most: a driver killed with -9 loses at most the entries
// of about two commit intervals, a suffix of the journal, which --resume tolerates.
//
// Tasks run only when the loop asks for a commit (every 10 ms while busy): the thread wakes
// a hundred times a second, not once per report. A task that throws (a tuner's reasons that
// are no JSON) ends the writing for good: what came before it is committed, nothing after it,
// so the journal never has a hole; every later commit throws that failure.
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace packtune {

class RecordThread {
 public:
  using Task = std::function<void()>;
  // `commit` makes what the tasks appended durable; it runs on the thread after them.
  explicit RecordThread(Task commit);
  // Finishes the commits asked for and stops the thread. Tasks posted since are dropped, as
  // a crash would lose them: nothing writes a log's lines but a commit, and a run that ends
  // (or fails) commits first.
  ~RecordThread();
  RecordThread(const RecordThread&) = delete;
  RecordThread& operator=(const RecordThread&) = delete;

  // The loop's: the task runs on the thread at the next commit, after every task posted
  // before it.
  void post(Task task);
  // post() to `records`, or runs `task` at once where there is none (before the driver's
  // folder is attached, or in a run that writes no journal).
  static void post_or_run(RecordThread* records, Task task);
  // Whether tasks were posted since the last commit was asked for.
  bool uncommitted() const { return uncommitted_; }
  // Hands what was posted to the thread to write and commit, and returns once the commit
  // before it is done. Rethrows the failure of an earlier commit (a full disk) or task.
  void commit_soon();
  // Writes and commits everything posted, and returns when it is on the disk; rethrows a
  // failure. After a failed commit the next one tries again (LineLog keeps what it could
  // not write), and one that succeeds clears it.
  void commit();

 private:
  void run();
  void hand_over();         // posted_ to the thread, and one more commit asked
  void wait_for_commits();  // until every commit asked is done
  void rethrow_failure();

  Task commit_;
  std::vector<Task> posted_;  // the loop's, until a commit hands them over
  bool uncommitted_ = false;

  std::mutex mutex_;
  std::condition_variable wake_;  // the thread: work came, or stop
  std::condition_variable done_;  // the loop: a commit finished
  std::vector<Task> handed_;      // guarded by mutex_
  std::uint64_t asked_ = 0;       // commits asked for; guarded by mutex_
  std::uint64_t finished_ = 0;    // commits done (or failed); guarded by mutex_
  std::exception_ptr failure_;    // the last commit's, or a task's; guarded by mutex_
  bool broken_ = false;           // a task threw: nothing more is written; guarded by mutex_
  bool stop_ = false;             // guarded by mutex_
  std::thread thread_;            // last: started once the rest is set
};

}  // namespace packtune
