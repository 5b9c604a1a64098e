#pragma once
// The experiment's journal, DIR/journal.jsonl: an append-only log of everything the tuner was
// told and everything it decided, one JSON object per line. `packtune run --resume DIR`
// replays it into a fresh tuner (TunerJournal) to pick the schedule up where a killed driver
// left it.
//
// Entries are buffered and made durable together (commit: one write, one fdatasync) by the
// driver's record thread (record_thread.hpp) when its loop asks, at most every 10 ms while
// busy (at once on an idle turn, and at the end), and
// results.jsonl is written only after the commit that holds its rows. A crash therefore loses at most a suffix of the journal, never a line in the
// middle, and results.jsonl never holds a report the journal lacks.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "experiment/line_log.hpp"

namespace packtune {

class Journal {
 public:
  // Starts a journal at `path` whose first entry is `header`. Throws Error naming the path
  // when it cannot be written.
  static Journal create(const std::string& path, const nlohmann::json& header);
  // Continues the journal at `path`: `entries` are its whole entries (as read() gives them),
  // and a torn last line (a crash mid-write) is cut off, so new entries start on a line of
  // their own. The file is read once.
  struct Reopened;
  static Reopened reopen(const std::string& path);

  // Every whole entry, the header first. A torn last line is skipped; a damaged line before
  // it is an InputError (the file was edited or the disk corrupted it), and so is a line
  // whose checksum or place differs from what was written (a line edited, lost or added).
  static std::vector<nlohmann::json> read(const std::string& path);
  // The first entry alone (the experiment's config), without reading the rest.
  static nlohmann::json read_header(const std::string& path);
  // The fingerprints of the data files (datasets/data_fingerprint.hpp) the journal recorded
  // last: the header's "data_files", or those of the last {"data_files": {"fingerprints": [...],
  // ...}} entry, which a resume appends when it runs on data that changed (allowed by
  // --allow-changed-data) or on a journal that had none. nullopt when it has none (a run of an
  // older packtune). Parses only the header and such entries: cheap on a long journal.
  static std::optional<nlohmann::json> recorded_data_files(const std::string& path);

  const std::string& path() const { return log_.path(); }
  // An entry, a JSON object. Each line is written with its place and a checksum, which read()
  // checks and takes off (journal.cpp).
  void append(const nlohmann::json& entry) { append_text(entry.dump()); }
  // An entry already in JSON text: one object on one line, without its newline.
  void append_text(std::string_view entry);
  bool dirty() const { return log_.dirty(); }
  bool unlinked() const { return log_.unlinked(); }
  // Writes what was appended since the last commit and waits until it is on the disk. On a
  // failure (a full disk) the file is cut back to its last whole line, the entries stay
  // pending, and Error says how to go on.
  void commit() { log_.flush(true); }

 private:
  Journal(LineLog log, long long next_seq) : log_(std::move(log)), next_seq_(next_seq) {}

  LineLog log_;
  long long next_seq_;  // the index of the next entry: the journal's whole entries so far
};

struct Journal::Reopened {
  Journal journal;
  std::vector<nlohmann::json> entries;
};

}  // namespace packtune
