#include "driver/record_thread.hpp"

#include <utility>

namespace packtune {

RecordThread::RecordThread(Task commit) : commit_(std::move(commit)), thread_([this] { run(); }) {}

RecordThread::~RecordThread() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void RecordThread::post(Task task) {
  posted_.push_back(std::move(task));
  uncommitted_ = true;
}

void RecordThread::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  std::vector<Task> tasks;
  while (true) {
    wake_.wait(lock, [this] { return stop_ || asked_ > finished_; });
    const bool stopping = stop_;
    const std::uint64_t asked = asked_;
    const bool broken = broken_;
    tasks.swap(handed_);
    lock.unlock();
    std::exception_ptr failure;
    bool task_failed = false;
    if (asked > finished_ && !broken) {
      try {
        for (auto& task : tasks) task();
      } catch (...) {
        failure = std::current_exception();
        task_failed = true;
      }
      // What the tasks before a failed one appended is a whole prefix: it may be committed.
      try {
        commit_();
      } catch (...) {
        if (!failure) failure = std::current_exception();
      }
    }
    tasks.clear();
    lock.lock();
    if (task_failed) {
      broken_ = true;
      failure_ = failure;
    } else if (!broken_) {
      // A commit that succeeds wrote what a failed one left: only the last outcome counts.
      failure_ = failure;
    }
    finished_ = asked;
    done_.notify_all();
    if (stopping) return;
  }
}

void RecordThread::post_or_run(RecordThread* records, Task task) {
  if (records) {
    records->post(std::move(task));
  } else {
    task();
  }
}

void RecordThread::hand_over() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& task : posted_) handed_.push_back(std::move(task));
    ++asked_;
  }
  posted_.clear();
  uncommitted_ = false;
  wake_.notify_one();
}

void RecordThread::wait_for_commits() {
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [this] { return finished_ >= asked_; });
}

void RecordThread::rethrow_failure() {
  std::exception_ptr failure;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failure = broken_ ? failure_ : std::exchange(failure_, nullptr);
  }
  if (failure) std::rethrow_exception(failure);
}

void RecordThread::commit_soon() {
  // At most one commit in flight: on a disk slower than the loop's interval the loop waits
  // here, so a crash still loses at most about two intervals of entries.
  wait_for_commits();
  rethrow_failure();
  if (uncommitted_) hand_over();
}

void RecordThread::commit() {
  hand_over();
  wait_for_commits();
  rethrow_failure();
}

}  // namespace packtune
