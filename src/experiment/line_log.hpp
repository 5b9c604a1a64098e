#pragma once
// An append-only file of whole JSON lines that a crash or a full disk can cut short but never
// leave with half a line: lines are buffered, written together, and on a failed write the file
// is cut back to the end of its last whole line. results.jsonl and the journal are both kept
// this way, so a reader (or `packtune run --resume`) sees only whole lines.
//
// The journal's group commit may also wait for fdatasync on a thread of the log's own
// (flush_async, then settle): the driver's loop goes on while the disk syncs, which took it
// a millisecond a commit, a hundred commits a second, under 10,000 actors.
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace packtune {

class LineLog {
 public:
  // An empty file at `path`. `advice` ends the message of a failed flush: what the user
  // should do about it.
  static LineLog create(const std::string& path, std::string advice);
  // Continues `path` after its first `whole_bytes` bytes; anything past them (a line a crash
  // tore) is cut off first, so new lines start on a line of their own.
  static LineLog reopen(const std::string& path, long long whole_bytes, std::string advice);

  LineLog(LineLog&& other) noexcept;
  LineLog& operator=(LineLog&& other) noexcept;
  LineLog(const LineLog&) = delete;
  LineLog& operator=(const LineLog&) = delete;
  ~LineLog();

  void append(const nlohmann::json& line);
  // A line already in JSON text, one line, without its newline.
  void append_text(std::string_view line);
  bool dirty() const { return !pending_.empty(); }
  // Writes the lines appended since the last flush; with `sync`, waits until they are on the
  // disk (fdatasync). On a failure the file is cut back to its last whole line and Error names
  // the path, the cause and the advice.
  void flush(bool sync);
  // Writes the pending lines now and has the log's thread wait for fdatasync; at most one such
  // sync is in flight. A flush while one is in flight settles it first.
  void flush_async();
  bool syncing() const { return !inflight_.empty(); }
  // The sync in flight is done: settle() would not wait.
  bool synced() const;
  // Waits for the sync in flight. On a failure the file is cut back to its last whole line
  // before that write, its lines are pending again, and Error says so, as flush does.
  void settle();
  // The lines appended since the last flush, taken out: the caller writes them later (write_now).
  std::string take_pending();
  // Writes `lines` (whole lines) now, before the pending ones; on a failure they are pending
  // again, ahead of the rest, and Error says so.
  void write_now(std::string lines);
  const std::string& path() const { return path_; }
  // The file was deleted (or renamed over) while open: lines written to it reach no one.
  bool unlinked() const;

 private:
  class Syncer;
  LineLog(std::string path, int fd, long long size, std::string advice);
  // write(2)s `text` whole at the end of the file; errno on a failure, else 0.
  int write_all(const std::string& text) const;
  // Cuts the file back to size_ after a failed write or sync and throws.
  [[noreturn]] void fail_back(const char* what, int error);

  std::string path_;
  int fd_ = -1;
  long long size_ = 0;  // bytes of whole lines on the disk
  std::string pending_;
  std::string inflight_;  // written, and being synced by syncer_
  std::string advice_;
  std::unique_ptr<Syncer> syncer_;  // started at the first flush_async
};

}  // namespace packtune
