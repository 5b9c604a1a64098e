#include "driver/journal.hpp"

#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string_view>
#include <utility>

#include "packtune/error.hpp"

namespace packtune {
namespace {

// Each line the journal writes carries its place and a checksum as the object's last two keys:
// {...,"_seq":N,"_crc":"xxxxxxxx"}, N the entry's index (the header's is 0) and the CRC-32 of the
// line as it was without them, {...}. A line lost, added or moved before the end shifts every
// later line from its place, and an edit changes a checksum: a resume finds both, where its
// replay alone would take such a line as written when no decision the journal records changed.
// Lines without them (an older packtune's) are read as before, where they come before any
// sealed line: a resume by this packtune seals what it adds.
constexpr std::string_view kSeqKey = "\"_seq\":";
constexpr std::string_view kCrcKey = ",\"_crc\":\"";
constexpr int kCrcDigits = 8;

std::uint32_t crc_of(std::string_view text, std::uint32_t crc = 0) {
  return static_cast<std::uint32_t>(
      crc32(crc, reinterpret_cast<const Bytef*>(text.data()), static_cast<uInt>(text.size())));
}

// What follows `entry` without its closing brace to make its sealed line: the seal, and the brace.
std::string seal_after(std::string_view entry, long long seq) {
  if (entry.size() < 2 || entry.front() != '{' || entry.back() != '}') {
    throw Error("journal: an entry must be one JSON object, not " + std::string(entry.substr(0, 40)));
  }
  char crc[kCrcDigits + 1];
  std::snprintf(crc, sizeof crc, "%08x", crc_of(entry));
  std::string seal = entry.size() > 2 ? "," : "";  // "{}" has no key before the seal
  seal += kSeqKey;
  seal += std::to_string(seq);
  seal += kCrcKey;
  seal += crc;
  seal += "\"}";
  return seal;
}

struct Seal {
  long long seq = 0;
  bool intact = false;  // the checksum matches the line without its seal
};

// The seal at the end of `line`, exactly as seal_after writes it; nullopt when there is none.
std::optional<Seal> seal_of(std::string_view line) {
  auto is_hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
  if (line.size() < kSeqKey.size() + kCrcKey.size() + kCrcDigits + 4 || line.substr(line.size() - 2) != "\"}") {
    return std::nullopt;
  }
  const auto crc_at = line.size() - 2 - kCrcDigits;
  for (auto i = crc_at; i < line.size() - 2; ++i) {
    if (!is_hex(line[i])) return std::nullopt;
  }
  if (line.substr(crc_at - kCrcKey.size(), kCrcKey.size()) != kCrcKey) return std::nullopt;
  auto digits = crc_at - kCrcKey.size();
  const auto seq_end = digits;
  while (digits > 0 && line[digits - 1] >= '0' && line[digits - 1] <= '9') --digits;
  if (digits == seq_end || digits < kSeqKey.size() + 1 || seq_end - digits > 15) return std::nullopt;
  const auto key_at = digits - kSeqKey.size();
  if (line.substr(key_at, kSeqKey.size()) != kSeqKey) return std::nullopt;
  const char before = line[key_at - 1];
  if (before != ',' && before != '{') return std::nullopt;
  Seal seal;
  seal.seq = std::stoll(std::string(line.substr(digits, seq_end - digits)));
  // The line without its seal: what came before it, and the closing brace.
  const auto body = line.substr(0, before == ',' ? key_at - 1 : key_at);
  const auto expected = std::strtoul(std::string(line.substr(crc_at, kCrcDigits)).c_str(), nullptr, 16);
  seal.intact = crc_of("}", crc_of(body)) == expected;
  return seal;
}

// `line`, the journal's line number `number` and its entry `index` (negative: not checked),
// parsed and checked against its seal, which is taken off. `sealed`: whether a line before it
// had one; from there on every line must (an older packtune's lines come first). Throws
// InputError naming the line when it does not hold.
nlohmann::json parse_line(const std::string& path, std::string_view line, long long number, long long index,
                          bool& sealed) {
  nlohmann::json entry;
  try {
    entry = nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": line " + std::to_string(number) + " is damaged (" + e.what() +
                     "); the experiment cannot be resumed from it");
  }
  if (!entry.is_object() || (!entry.contains("_seq") && !entry.contains("_crc"))) {
    if (sealed) {
      throw InputError(path + ": line " + std::to_string(number) +
                       " has no checksum, though a line before it has one: it was added or rewritten after that "
                       "line was written; restore the journal, the experiment cannot be resumed from it as it is");
    }
    return entry;
  }
  sealed = true;
  const auto seal = seal_of(line);
  if (!seal || !seal->intact) {
    throw InputError(path + ": line " + std::to_string(number) +
                     " was changed after it was written (its checksum differs); restore the journal, "
                     "the experiment cannot be resumed from it as it is");
  }
  if (index >= 0 && seal->seq != index) {
    // Counted in entries: blank lines are none.
    throw InputError(path + ": line " + std::to_string(number) + " is entry " + std::to_string(index + 1) +
                     " but was written as entry " + std::to_string(seal->seq + 1) +
                     ": an entry before it was removed, added or moved; restore the journal, the experiment "
                     "cannot be resumed from it as it is");
  }
  entry.erase("_seq");
  entry.erase("_crc");
  return entry;
}

std::string resume_advice(const std::string& path) {
  return "free space there, then continue with `packtune run --resume " +
         std::filesystem::path(path).parent_path().string() + "`";
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot read the journal; is this the results folder of a packtune run?");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The whole lines of `text`, parsed; `whole` is set to the bytes they span. What follows the
// last newline was being written at a crash and is left out; a blank line (an editor's) is no
// entry.
std::vector<nlohmann::json> parse_entries(const std::string& path, const std::string& text, long long& whole) {
  std::vector<nlohmann::json> entries;
  std::size_t begin = 0;
  bool sealed = false;
  for (long long line = 1;; ++line) {
    const auto end = text.find('\n', begin);
    if (end == std::string::npos) break;
    const auto text_of_line = std::string_view(text).substr(begin, end - begin);
    if (!LineLog::blank(text_of_line)) {
      const auto index = static_cast<long long>(entries.size());
      entries.push_back(parse_line(path, text_of_line, line, index, sealed));
    }
    begin = end + 1;
  }
  whole = static_cast<long long>(begin);
  return entries;
}

}  // namespace

void Journal::append_text(std::string_view entry) {
  const auto seal = seal_after(entry, next_seq_);
  log_.append_text(entry.substr(0, entry.size() - 1), seal);
  ++next_seq_;  // only once the line is the log's: a line refused takes no place
}

Journal Journal::create(const std::string& path, const nlohmann::json& header) {
  Journal journal(LineLog::create(path, resume_advice(path)), 0);
  journal.append(header);
  journal.commit();
  return journal;
}

Journal::Reopened Journal::reopen(const std::string& path) {
  long long whole = 0;
  auto entries = parse_entries(path, read_text(path), whole);
  const auto next = static_cast<long long>(entries.size());
  return Reopened{Journal(LineLog::reopen(path, whole, resume_advice(path)), next), std::move(entries)};
}

std::vector<nlohmann::json> Journal::read(const std::string& path) {
  long long whole = 0;
  return parse_entries(path, read_text(path), whole);
}

nlohmann::json Journal::read_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  long long number = 0;
  do {
    if (!in || !std::getline(in, line) || in.eof()) {
      throw InputError(path + ": no journal header; is this the results folder of a packtune run?");
    }
    ++number;
  } while (LineLog::blank(line));
  bool sealed = false;
  return parse_line(path, line, number, 0, sealed);
}

std::optional<nlohmann::json> Journal::recorded_data_files(const std::string& path) {
  const auto text = read_text(path);
  // An entry of its own dumps as {"data_files":...: nlohmann::json orders its keys, and the
  // entry has no other.
  static const std::string entry_start = "{\"data_files\":";
  std::optional<nlohmann::json> recorded;
  std::size_t begin = 0;
  bool header = true;  // the first line that is not blank
  for (int line = 1;; ++line) {
    const auto end = text.find('\n', begin);
    if (end == std::string::npos) break;  // none, or a torn last line
    if (LineLog::blank(std::string_view(text).substr(begin, end - begin))) {
      begin = end + 1;
      continue;
    }
    const bool first = std::exchange(header, false);
    if (first || text.compare(begin, entry_start.size(), entry_start) == 0) {
      // Only these lines are read here: --resume checks them all (Journal::reopen).
      bool sealed = false;
      const auto entry = parse_line(path, std::string_view(text).substr(begin, end - begin), line, -1, sealed);
      try {
        auto files = first ? entry.value("data_files", nlohmann::json())
                           : entry.at("data_files").value("fingerprints", nlohmann::json());
        if (!files.is_null()) recorded = std::move(files);
      } catch (const nlohmann::json::exception& e) {
        throw InputError(path + ": line " + std::to_string(line) + " is damaged (" + e.what() +
                         "); the experiment cannot be resumed from it");
      }
    }
    begin = end + 1;
  }
  return recorded;
}

}  // namespace packtune
