#pragma once
// Throughput profiles kept across runs (docs/planner.md#the-profile-cache). A profile is a
// property of the hardware and software that trains a shape, not of one experiment: a step of
// resnet/s3x2/c16/b128 on an H200 under one LibTorch takes as long in tomorrow's run as today.
// So the driver keeps every profile its actors measure in a per-user file, keyed by the actor's
// context (device model, LibTorch build, the data as the model reads it) and the shape key, and
// a later run, or another actor of the same context, takes it from there instead of holding
// jobs while one is measured again.
//
// The file is JSON, read once when the cache opens; each store() reads it again under an
// exclusive flock(2), merges its entry and replaces the file by rename, so runs that share a
// cache never lose each other's profiles and a reader never sees half a file. A cache that
// cannot be read is a cache miss, never a failed run: the driver logs why and measures.
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace packtune {

class ProfileCache {
 public:
  // What a step time depends on besides the shape (protocol::Ready's fields of that name).
  struct Context {
    std::string device_model;
    std::string build;
    std::string data;
    bool empty() const { return device_model.empty() || build.empty(); }
  };
  struct Entry {
    Context context;
    std::string shape;                          // the trial shape's key
    std::vector<std::pair<int, double>> points;  // seconds per step by members, ascending
    // The largest unit it was allowed to time (the run's max_pack, or less where the actor's
    // memory beside its pack held less, or the last it timed where memory ended): a profile that
    // reached it says nothing of larger units, and a run that may pack more measures again.
    int max_members = 1;
    std::string measured;                       // UTC, ISO 8601
  };

  // The file of `dir`; nothing is read or written until open() or a store().
  explicit ProfileCache(std::string dir);

  // The per-user cache folder: $PACKTUNE_CACHE_DIR, else $XDG_CACHE_HOME/packtune, else
  // ~/.cache/packtune. Empty when none of these is set (no home: no cache).
  static std::string default_dir();
  const std::string& file() const { return file_; }

  // Reads the file. Returns why it could not ("" when it could, or when there is none yet);
  // the cache is then empty in memory.
  std::string open();
  // The entry of `context` and `shape` that speaks for units of up to `max_members`.
  std::optional<Entry> find(const Context& context, const std::string& shape, int max_members) const;
  // Keeps `entry` here and in the file (replacing one of the same context and shape). Returns
  // why the file could not be written, or "".
  std::string store(Entry entry);
  // Every entry, in file order.
  const std::vector<Entry>& entries() const { return entries_; }
  // Removes the entries whose device model contains `device_filter` (all with an empty
  // filter), in the file too. Returns how many went; throws Error when the file cannot be
  // written.
  std::size_t clear(const std::string& device_filter);

  // The time now as Entry::measured holds it.
  static std::string now_utc();

 private:
  std::string dir_;
  std::string file_;
  std::vector<Entry> entries_;
};

}  // namespace packtune
