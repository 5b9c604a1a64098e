#pragma once
// An append-only file of whole JSON lines that a crash or a full disk can cut short but never
// leave with half a line: lines are buffered, written together, and on a failed write the file
// is cut back to the end of its last whole line. results.jsonl and the journal are both kept
// this way, so a reader (or `packtune run --resume`) sees only whole lines.
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
  // A line already in JSON text, one line, without its newline; `more` continues it (the
  // journal's seal after its entry, without a copy of the entry to join them).
  void append_text(std::string_view line, std::string_view more = {});
  bool dirty() const { return !pending_.empty(); }
  // A line of spaces alone (an editor's): no entry, to every reader of these files.
  static bool blank(std::string_view line) { return line.find_first_not_of(" \t\r") == std::string_view::npos; }
  // Writes the lines appended since the last flush; with `sync`, waits until they are on the
  // disk (fdatasync). On a failure the file is cut back to its last whole line and Error names
  // the path, the cause and the advice.
  void flush(bool sync);
  const std::string& path() const { return path_; }
  // The file was deleted (or renamed over) while open: lines written to it reach no one.
  bool unlinked() const;

 private:
  LineLog(std::string path, int fd, long long size, std::string advice);

  std::string path_;
  int fd_ = -1;
  long long size_ = 0;  // bytes of whole lines on the disk
  std::string pending_;
  std::string advice_;
};

}  // namespace packtune
