#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "driver/record_thread.hpp"
#include "packtune/error.hpp"

using namespace packtune;

// The tasks and commits write into `log`; only the thread touches it until commit() returns.
TEST_CASE("the record thread runs tasks in order, and only at a commit") {
  std::vector<std::string> log;
  RecordThread records([&log] { log.push_back("commit"); });
  CHECK_FALSE(records.uncommitted());
  records.post([&log] { log.push_back("a"); });
  records.post([&log] { log.push_back("b"); });
  CHECK(records.uncommitted());
  records.commit_soon();
  CHECK_FALSE(records.uncommitted());
  records.post([&log] { log.push_back("c"); });
  records.commit();  // waits for the soon one too
  // A thread still busy when the next commit is asked does both at once: one commit or two.
  const auto commits = std::count(log.begin(), log.end(), "commit");
  CHECK((commits == 1 || commits == 2));
  CHECK(log.back() == "commit");
  log.erase(std::remove(log.begin(), log.end(), "commit"), log.end());
  CHECK(log == std::vector<std::string>{"a", "b", "c"});
}

TEST_CASE("a failed commit is thrown at the loop's next commit, and the one after tries again") {
  int commits = 0;
  bool disk_full = true;
  RecordThread records([&] {
    ++commits;
    if (disk_full) throw Error("results.jsonl: cannot write (No space left on device)");
  });
  records.post([] {});
  records.commit_soon();  // fails on the thread; the loop does not wait for it
  records.post([] {});
  // The failure comes back at the next commit, whether it waits (commit) or not (commit_soon).
  CHECK_THROWS_WITH(records.commit_soon(), Catch::Contains("No space left"));
  CHECK_THROWS_WITH(records.commit(), Catch::Contains("No space left"));  // tried again: still full
  const int failed = commits;
  disk_full = false;  // the thread is idle: commit() returned
  records.commit();   // a commit that succeeds wrote what the failed ones left
  CHECK(commits == failed + 1);
  records.commit_soon();  // nothing to throw any more
  records.commit();
}

TEST_CASE("a record thread that stops finishes the commits asked for and drops what came after") {
  std::vector<std::string> log;
  {
    RecordThread records([&log] { log.push_back("commit"); });
    records.post([&log] { log.push_back("a"); });
    records.commit_soon();
    records.post([&log] { log.push_back("b"); });  // no commit asked: lost, as in a crash
  }
  CHECK(log == std::vector<std::string>{"a", "commit"});
}

TEST_CASE("a task that throws ends the writing: what came before it is committed, nothing after") {
  std::vector<std::string> log;
  std::vector<std::string> committed;
  RecordThread records([&] { committed = log; });
  records.post([&log] { log.push_back("a"); });
  records.post([] { throw Error("journal: invalid UTF-8 in a tuner's reasons"); });
  records.post([&log] { log.push_back("b"); });
  CHECK_THROWS_WITH(records.commit(), Catch::Contains("invalid UTF-8"));
  CHECK(committed == std::vector<std::string>{"a"});
  records.post([&log] { log.push_back("c"); });
  CHECK_THROWS_WITH(records.commit_soon(), Catch::Contains("invalid UTF-8"));
  CHECK_THROWS_WITH(records.commit(), Catch::Contains("invalid UTF-8"));
  CHECK(log == std::vector<std::string>{"a"});  // no hole: nothing after the failed task
}
