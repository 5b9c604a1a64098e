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
    tasks.swap(handed_);
    lock.unlock();
    std::exception_ptr failure;
    try {
      if (asked > finished_) {
        for (auto& task : tasks) task();
        commit_();
      }
    } catch (...) {
      failure = std::current_exception();
    }
    tasks.clear();
    lock.lock();
    if (failure && !failure_) failure_ = failure;
    finished_ = asked;
    done_.notify_all();
    if (stopping) return;
  }
}

void RecordThread::rethrow_failure() {
  std::exception_ptr failure;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failure = std::exchange(failure_, nullptr);
  }
  if (failure) std::rethrow_exception(failure);
}

void RecordThread::commit_soon() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& task : posted_) handed_.push_back(std::move(task));
    ++asked_;
  }
  posted_.clear();
  uncommitted_ = false;
  wake_.notify_one();
  rethrow_failure();
}

void RecordThread::commit() {
  std::uint64_t mine = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& task : posted_) handed_.push_back(std::move(task));
    mine = ++asked_;
  }
  posted_.clear();
  uncommitted_ = false;
  wake_.notify_one();
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return finished_ >= mine; });
  lock.unlock();
  rethrow_failure();
}

}  // namespace packtune
