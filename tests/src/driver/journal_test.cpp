#include <catch2/catch.hpp>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "../../temp_dir.hpp"
#include "driver/journal.hpp"
#include "packtune/error.hpp"

using namespace packtune;

namespace {

std::string text_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// What the journal writes for `entry` at index `seq`, as docs/faults.md describes it, with
// zlib's CRC-32 as the oracle.
std::string sealed(const std::string& entry, long long seq) {
  const auto crc = crc32(0, reinterpret_cast<const Bytef*>(entry.data()), static_cast<uInt>(entry.size()));
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08lx", static_cast<unsigned long>(crc));
  return entry.substr(0, entry.size() - 1) + (entry.size() > 2 ? "," : "") + "\"_seq\":" + std::to_string(seq) +
         ",\"_crc\":\"" + hex + "\"}";
}

std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path, std::ios::binary);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

void write_lines(const std::string& path, const std::vector<std::string>& lines) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  for (const auto& line : lines) out << line << '\n';
}

// The message of the InputError reading `path` throws; "" when it reads.
std::string read_error(const std::string& path) {
  try {
    Journal::read(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the journal keeps what was committed, and nothing before a commit") {
  testing::TempDir dir;
  const auto path = dir.file("journal.jsonl");
  {
    auto journal = Journal::create(path, {{"header", 1}});
    journal.append({{"a", 1}});
    journal.append({{"b", 2}});
    CHECK(journal.dirty());
    CHECK(Journal::read(path).size() == 1);  // the header is committed at once
    journal.commit();
    CHECK_FALSE(journal.dirty());
    journal.append({{"c", 3}});  // never committed: lost, as at a crash
  }
  const auto entries = Journal::read(path);
  REQUIRE(entries.size() == 3);
  CHECK(entries[0]["header"] == 1);
  CHECK(entries[2]["b"] == 2);
}

TEST_CASE("a torn last line is skipped when read and cut off when the journal continues") {
  testing::TempDir dir;
  const auto path = dir.file("journal.jsonl");
  Journal::create(path, {{"header", 1}});
  std::ofstream(path, std::ios::app) << sealed("{\"a\":1}", 1) << "\n{\"b\": ";  // the crash came mid-write
  CHECK(Journal::read(path).size() == 2);
  {
    auto reopened = Journal::reopen(path);
    CHECK(reopened.entries.size() == 2);
    reopened.journal.append({{"c", 3}});
    reopened.journal.commit();
  }
  CHECK(text_of(path) ==
        sealed("{\"header\":1}", 0) + "\n" + sealed("{\"a\":1}", 1) + "\n" + sealed("{\"c\":3}", 2) + "\n");
  const auto entries = Journal::read(path);
  REQUIRE(entries.size() == 3);
  CHECK(entries[2]["c"] == 3);
}

TEST_CASE("a damaged line before the end is refused with its number") {
  testing::TempDir dir;
  const auto path = dir.file("journal.jsonl");
  std::ofstream(path) << "{\"header\": 1}\n{\"a\" 1}\n{\"b\": 2}\n";
  try {
    Journal::read(path);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("line 2 is damaged"));
  }
  CHECK_THROWS_AS(Journal::read(dir.file("missing.jsonl")), InputError);
}

TEST_CASE("a journal that cannot be created names its path") {
  testing::TempDir dir;
  try {
    Journal::create(dir.file("no/such/folder/journal.jsonl"), {{"header", 1}});
    FAIL("no error");
  } catch (const Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("no/such/folder/journal.jsonl"));
  }
}

TEST_CASE("the header is read alone") {
  testing::TempDir dir;
  const auto path = dir.file("journal.jsonl");
  {
    auto journal = Journal::create(path, {{"config", {{"seed", 3}}}});
    journal.append({{"a", 1}});
    journal.commit();
  }
  CHECK(Journal::read_header(path)["config"]["seed"] == 3);
  std::ofstream(dir.file("torn.jsonl")) << "{\"config\": ";
  CHECK_THROWS_AS(Journal::read_header(dir.file("torn.jsonl")), InputError);
}

TEST_CASE("the data files' fingerprints recorded last: the header's, or a later data_files entry's") {
  testing::TempDir dir;
  const auto path = dir.file("journal.jsonl");
  const nlohmann::json first = {{{"path", "/d/x.npy"}, {"size", 80}, {"mtime_ns", 1}, {"sample_sha256", "aa"}}};
  const nlohmann::json second = {{{"path", "/d/x.npy"}, {"size", 40}, {"mtime_ns", 2}, {"sample_sha256", "bb"}}};
  {
    auto old = Journal::create(dir.file("old.jsonl"), {{"config", {{"seed", 1}}}});
    old.append({{"job", {{"trial", 0}}}});
    old.commit();
  }
  CHECK_FALSE(Journal::recorded_data_files(dir.file("old.jsonl")).has_value());  // an older packtune's

  auto journal = Journal::create(path, {{"config", {{"seed", 1}}}, {"data_files", first}});
  journal.append({{"job", {{"trial", 0}, {"data_files", "not this"}}}});
  journal.commit();
  CHECK(Journal::recorded_data_files(path) == first);
  journal.append({{"data_files", {{"fingerprints", second}, {"changed", {"/d/x.npy (size 80 -> 40 bytes)"}},
                                  {"allowed", "--allow-changed-data"}}}});
  journal.append({{"result", {{"trial", 0}}}});
  journal.commit();
  CHECK(Journal::recorded_data_files(path) == second);

  // A torn last line is not a record; a damaged one before it is refused.
  std::ofstream(path, std::ios::app) << R"({"data_files":{"fingerprints":[)";
  CHECK(Journal::recorded_data_files(path) == second);
  std::ofstream(path, std::ios::app) << "\n{}\n";
  CHECK_THROWS_AS(Journal::recorded_data_files(path), InputError);
}

TEST_CASE("each line carries its place and checksum, and a line edited, lost, added or moved is refused by number") {
  testing::TempDir dir;
  const auto path = dir.file("journal.jsonl");
  {
    auto journal = Journal::create(path, {{"header", 1}});
    journal.append({{"job", {{"trial", 0}}}});
    journal.append_text(R"({"report":{"trial":0,"metric":0.5},"row":null})");
    journal.append(nlohmann::json::object());
    journal.commit();
  }
  const auto lines = lines_of(path);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == sealed(R"({"header":1})", 0));
  CHECK(lines[2] == sealed(R"({"report":{"trial":0,"metric":0.5},"row":null})", 2));
  CHECK(lines[3] == sealed("{}", 3));
  const auto entries = Journal::read(path);
  REQUIRE(entries.size() == 4);
  CHECK(entries[2] == nlohmann::json::parse(R"({"report":{"trial":0,"metric":0.5},"row":null})"));  // seal taken off
  CHECK(entries[3] == nlohmann::json::object());
  CHECK(Journal::read_header(path) == nlohmann::json{{"header", 1}});

  auto edited = lines;
  edited[2].replace(edited[2].find("0.5"), 3, "0.9");
  write_lines(path, edited);
  CHECK_THAT(read_error(path), Catch::Contains("line 3 was changed after it was written"));
  edited = lines;
  edited[0].replace(edited[0].find(":1"), 2, ":2");  // the header too, read alone
  write_lines(path, edited);
  CHECK_THROWS_WITH(Journal::read_header(path), Catch::Contains("line 1 was changed after it was written"));
  edited = lines;
  edited[1].insert(edited[1].find("\"_seq"), " ");  // reformatted counts as changed
  write_lines(path, edited);
  CHECK_THAT(read_error(path), Catch::Contains("line 2 was changed after it was written"));

  write_lines(path, {lines[0], lines[2], lines[3]});  // the job's line lost
  CHECK_THAT(read_error(path), Catch::Contains("line 2 is entry 2 but was written as entry 3: an entry before it was removed"));
  write_lines(path, {lines[0], lines[1], lines[1], lines[2]});  // a line added
  CHECK_THAT(read_error(path), Catch::Contains("line 3 is entry 3 but was written as entry 2"));
  write_lines(path, {lines[0], lines[2], lines[1], lines[3]});  // two lines swapped
  CHECK_THAT(read_error(path), Catch::Contains("line 2 is entry 2 but was written as entry 3"));
  // Losing the last lines is what a crash does: the rest reads.
  write_lines(path, {lines[0], lines[1]});
  CHECK(read_error(path).empty());
}

TEST_CASE("an older packtune's unsealed lines read as before, and this one seals what it adds to them") {
  testing::TempDir dir;
  const auto path = dir.file("journal.jsonl");
  std::ofstream(path) << "{\"header\": 1}\n{\"job\": {\"trial\": 0}}\n";
  {
    auto reopened = Journal::reopen(path);
    REQUIRE(reopened.entries.size() == 2);
    reopened.journal.append({{"result", 1}});
    reopened.journal.commit();
  }
  CHECK(lines_of(path).back() == sealed(R"({"result":1})", 2));
  auto entries = Journal::read(path);
  REQUIRE(entries.size() == 3);
  CHECK(entries[2] == nlohmann::json{{"result", 1}});
  const auto sealed_lines = lines_of(path);
  // Seal keys that are not a seal as written are a change.
  std::ofstream(path, std::ios::app) << "{\"_seq\": 3, \"_crc\": \"00000000\"}\n";
  CHECK_THAT(read_error(path), Catch::Contains("line 4 was changed after it was written"));
  // A line without a seal after a sealed one: edited with its seal taken off, or added.
  write_lines(path, sealed_lines);
  std::ofstream(path, std::ios::app) << "{\"finished\": true}\n";
  CHECK_THAT(read_error(path), Catch::Contains("line 4 has no checksum, though a line before it has one"));
}

TEST_CASE("blank lines (an editor's) are no entries, and a journal that is a link is never written through") {
  namespace fs = std::filesystem;
  testing::TempDir dir;
  const auto path = dir.file("journal.jsonl");
  {
    auto journal = Journal::create(path, {{"header", 1}});
    journal.append({{"a", 1}});
    journal.append({{"b", 2}});
    journal.commit();
  }
  const auto lines = lines_of(path);
  write_lines(path, {"", lines[0], "", lines[1], "  ", lines[2], ""});
  const auto entries = Journal::read(path);
  REQUIRE(entries.size() == 3);
  CHECK(entries[2]["b"] == 2);
  CHECK(Journal::read_header(path) == nlohmann::json{{"header", 1}});
  write_lines(path, {lines[0], "", lines[2]});  // a line lost still is
  CHECK_THAT(read_error(path), Catch::Contains("line 3 is entry 2 but was written as entry 3"));

  // Another run's journal behind a link in this folder: --resume refuses it and leaves it alone.
  write_lines(dir.file("other.jsonl"), lines);
  fs::remove(path);
  fs::create_symlink(dir.file("other.jsonl"), path);
  CHECK_THROWS_WITH(Journal::reopen(path), Catch::Contains("is a link; a run writes its own files"));
  CHECK(lines_of(dir.file("other.jsonl")) == lines);
}
