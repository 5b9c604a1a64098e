#pragma once
// The experiment's journal, DIR/journal.jsonl: an append-only log of everything the tuner was
// told and everything it decided, one JSON object per line. `packtune run --resume DIR`
// replays it into a fresh tuner (TunerJournal) to pick the schedule up where a killed driver
// left it.
//
// Entries are buffered and made durable together (commit: one write, one fdatasync) once per
// turn of the driver's loop, and results.jsonl is written only after the commit that holds
// its rows. A crash therefore loses at most a suffix of the journal, never a line in the
// middle, and results.jsonl never holds a report the journal lacks.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace packtune {

class Journal {
 public:
  // Starts a journal at `path` whose first entry is `header`. Throws Error naming the path
  // when it cannot be written.
  static Journal create(const std::string& path, const nlohmann::json& header);
  // Continues the journal at `path` after read(): a torn last line (a crash mid-write) is cut
  // off first, so new entries start on a line of their own.
  static Journal reopen(const std::string& path);

  // Every whole entry, the header first. A torn last line is skipped; a damaged line before
  // it is an InputError (the file was edited or the disk corrupted it).
  static std::vector<nlohmann::json> read(const std::string& path);
  // The first entry alone (the experiment's config), without reading the rest.
  static nlohmann::json read_header(const std::string& path);

  Journal(Journal&& other) noexcept;
  Journal& operator=(Journal&& other) noexcept;
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;
  ~Journal();

  const std::string& path() const { return path_; }
  void append(const nlohmann::json& entry);
  bool dirty() const { return !pending_.empty(); }
  // Writes what was appended since the last commit and waits until it is on the disk. On a
  // failure (a full disk) the file is cut back to its last whole line and Error is thrown.
  void commit();

 private:
  Journal(std::string path, int fd, long long size);

  std::string path_;
  int fd_ = -1;
  long long size_ = 0;  // bytes committed
  std::string pending_;
};

}  // namespace packtune
