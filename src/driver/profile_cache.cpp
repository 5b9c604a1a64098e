#include "driver/profile_cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "packtune/error.hpp"

namespace packtune {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int kFormat = 1;
constexpr const char* kFileName = "throughput_profiles.json";

// Reads `path` into entries; "" or why not. A missing file is an empty cache.
std::string read_entries(const std::string& path, std::vector<ProfileCache::Entry>& out) {
  out.clear();
  std::error_code ec;
  if (!fs::exists(path, ec) && !ec) return "";
  std::ifstream in(path);
  if (!in) return path + ": cannot be opened";
  const auto doc = json::parse(in, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return path + ": not a JSON object";
  if (doc.value("format", 0) != kFormat) return path + ": format " + doc.value("format", json()).dump() + ", not " + std::to_string(kFormat);
  const auto profiles = doc.find("profiles");
  if (profiles == doc.end() || !profiles->is_array()) return path + ": no \"profiles\" array";
  for (const auto& p : *profiles) {
    ProfileCache::Entry e;
    try {
      e.context = {p.at("device_model").get<std::string>(), p.at("build").get<std::string>(),
                   p.at("data").get<std::string>()};
      e.shape = p.at("shape").get<std::string>();
      e.measured = p.value("measured", std::string());
      e.max_members = p.at("max_members").get<int>();
      for (const auto& point : p.at("points")) {
        const auto members = point.at(0).get<int>();
        const auto seconds = point.at(1).get<double>();
        // A hand-edited or damaged entry must not size units: the planner divides by these.
        if (members < 1 || !std::isfinite(seconds) || seconds <= 0) throw std::invalid_argument("point");
        e.points.emplace_back(members, seconds);
      }
    } catch (const std::exception&) {  // json's type and range errors, and a bad point
      out.clear();
      return path + ": a profile without device_model, build, data, shape or valid points";
    }
    if (e.points.empty()) continue;
    out.push_back(std::move(e));
  }
  return "";
}

json to_json(const ProfileCache::Entry& e) {
  json points = json::array();
  for (const auto& [members, seconds] : e.points) points.push_back({members, seconds});
  return {{"device_model", e.context.device_model}, {"build", e.context.build}, {"data", e.context.data},
          {"shape", e.shape}, {"points", points}, {"max_members", e.max_members}, {"measured", e.measured}};
}

bool same_key(const ProfileCache::Entry& a, const ProfileCache::Context& context, const std::string& shape) {
  return a.shape == shape && a.context.device_model == context.device_model && a.context.build == context.build &&
         a.context.data == context.data;
}

// Holds an exclusive flock on DIR/.lock for one read-modify-write of the cache file.
class WriteLock {
 public:
  explicit WriteLock(const std::string& dir) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw Error("cannot create the profile cache folder " + dir + ": " + ec.message());
    const auto path = dir + "/.lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0) throw Error("cannot open " + path + ": " + std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) {
        const int error = errno;
        ::close(fd_);
        throw Error("cannot lock " + path + ": " + std::strerror(error));
      }
    }
  }
  ~WriteLock() { ::close(fd_); }
  WriteLock(const WriteLock&) = delete;
  WriteLock& operator=(const WriteLock&) = delete;

 private:
  int fd_ = -1;
};

void write_entries(const std::string& path, const std::vector<ProfileCache::Entry>& entries) {
  json doc = {{"format", kFormat}, {"profiles", json::array()}};
  for (const auto& e : entries) doc["profiles"].push_back(to_json(e));
  const auto tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << doc.dump(1) << "\n";
    out.flush();
    if (!out) throw Error("cannot write " + tmp + ": " + std::strerror(errno));
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error("cannot replace " + path + ": " + ec.message());
  }
}

}  // namespace

ProfileCache::ProfileCache(std::string dir) : dir_(std::move(dir)), file_(dir_ + "/" + kFileName) {}

std::string ProfileCache::default_dir() {
  auto set = [](const char* name) {
    const char* value = std::getenv(name);
    return value && *value ? std::string(value) : std::string();
  };
  if (auto dir = set("PACKTUNE_CACHE_DIR"); !dir.empty()) return dir;
  if (auto dir = set("XDG_CACHE_HOME"); !dir.empty()) return dir + "/packtune";
  if (auto home = set("HOME"); !home.empty()) return home + "/.cache/packtune";
  return "";
}

std::string ProfileCache::open() { return read_entries(file_, entries_); }

std::optional<ProfileCache::Entry> ProfileCache::find(const Context& context, const std::string& shape,
                                                     int max_members) const {
  if (context.empty()) return std::nullopt;
  for (const auto& e : entries_) {
    if (!same_key(e, context, shape)) continue;
    // It stopped short of its limit (throughput saturated, or memory ran out): complete for any.
    if (e.max_members >= max_members || e.points.back().first < e.max_members) return e;
  }
  return std::nullopt;
}

std::string ProfileCache::store(Entry entry) {
  if (entry.context.empty() || entry.points.empty()) return "";
  auto replace = [&entry](std::vector<Entry>& entries) {
    auto same = [&entry](const Entry& e) { return same_key(e, entry.context, entry.shape); };
    entries.erase(std::remove_if(entries.begin(), entries.end(), same), entries.end());
    entries.push_back(entry);
  };
  replace(entries_);
  try {
    WriteLock lock(dir_);
    // Another run may have written since this one read: merge into the file as it is now.
    std::vector<Entry> on_disk;
    if (read_entries(file_, on_disk) != "") on_disk.clear();  // a damaged cache is replaced
    replace(on_disk);
    write_entries(file_, on_disk);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::size_t ProfileCache::clear(const std::string& device_filter) {
  auto matches = [&device_filter](const Entry& e) {
    return device_filter.empty() || e.context.device_model.find(device_filter) != std::string::npos;
  };
  WriteLock lock(dir_);
  std::vector<Entry> on_disk;
  const auto why = read_entries(file_, on_disk);
  // A damaged file is cleared whole (only an empty filter may do that: it names no entries).
  if (!why.empty() && !device_filter.empty()) throw InputError(why + "; clear it with `packtune profile --clear`");
  const auto before = on_disk.size();
  on_disk.erase(std::remove_if(on_disk.begin(), on_disk.end(), matches), on_disk.end());
  const auto removed = before - on_disk.size();
  if (on_disk.empty()) {
    std::error_code ec;
    fs::remove(file_, ec);
    if (ec) throw Error("cannot remove " + file_ + ": " + ec.message());
  } else {
    write_entries(file_, on_disk);
  }
  entries_ = std::move(on_disk);
  return removed;
}

std::string ProfileCache::now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace packtune
