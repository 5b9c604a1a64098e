#include "driver/journal.hpp"

#include <filesystem>
#include <fstream>

#include "packtune/error.hpp"

namespace packtune {
namespace {

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
// last newline was being written at a crash and is left out.
std::vector<nlohmann::json> parse_entries(const std::string& path, const std::string& text, long long& whole) {
  std::vector<nlohmann::json> entries;
  std::size_t begin = 0;
  for (int line = 1;; ++line) {
    const auto end = text.find('\n', begin);
    if (end == std::string::npos) break;
    try {
      entries.push_back(nlohmann::json::parse(text.begin() + static_cast<long>(begin),
                                              text.begin() + static_cast<long>(end)));
    } catch (const nlohmann::json::exception& e) {
      throw InputError(path + ": line " + std::to_string(line) + " is damaged (" + e.what() +
                       "); the experiment cannot be resumed from it");
    }
    begin = end + 1;
  }
  whole = static_cast<long long>(begin);
  return entries;
}

}  // namespace

Journal Journal::create(const std::string& path, const nlohmann::json& header) {
  Journal journal(LineLog::create(path, resume_advice(path)));
  journal.append(header);
  journal.commit();
  return journal;
}

Journal::Reopened Journal::reopen(const std::string& path) {
  long long whole = 0;
  auto entries = parse_entries(path, read_text(path), whole);
  return Reopened{Journal(LineLog::reopen(path, whole, resume_advice(path))), std::move(entries)};
}

std::vector<nlohmann::json> Journal::read(const std::string& path) {
  long long whole = 0;
  return parse_entries(path, read_text(path), whole);
}

nlohmann::json Journal::read_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  if (!in || !std::getline(in, line) || in.eof()) {
    throw InputError(path + ": no journal header; is this the results folder of a packtune run?");
  }
  try {
    return nlohmann::json::parse(line);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": line 1 is damaged (" + e.what() + "); the experiment cannot be resumed from it");
  }
}

std::optional<nlohmann::json> Journal::recorded_data_files(const std::string& path) {
  const auto text = read_text(path);
  // An entry of its own dumps as {"data_files":...: nlohmann::json orders its keys, and the
  // entry has no other.
  static const std::string entry_start = "{\"data_files\":";
  std::optional<nlohmann::json> recorded;
  std::size_t begin = 0;
  for (int line = 1;; ++line) {
    const auto end = text.find('\n', begin);
    if (end == std::string::npos) break;  // none, or a torn last line
    if (line == 1 || text.compare(begin, entry_start.size(), entry_start) == 0) {
      try {
        const auto entry =
            nlohmann::json::parse(text.begin() + static_cast<long>(begin), text.begin() + static_cast<long>(end));
        auto files = line == 1 ? entry.value("data_files", nlohmann::json())
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
