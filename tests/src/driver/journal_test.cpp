#include <catch2/catch.hpp>

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
  std::ofstream(path, std::ios::app) << "{\"a\": 1}\n{\"b\": ";  // the crash came mid-write
  CHECK(Journal::read(path).size() == 2);
  {
    auto reopened = Journal::reopen(path);
    CHECK(reopened.entries.size() == 2);
    reopened.journal.append({{"c", 3}});
    reopened.journal.commit();
  }
  CHECK(text_of(path) == "{\"header\":1}\n{\"a\": 1}\n{\"c\":3}\n");
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
