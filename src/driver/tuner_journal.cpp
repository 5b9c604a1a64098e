#include "driver/tuner_journal.hpp"

#include <cmath>

#include <fmt/format.h>

#include "experiment/results_writer.hpp"
#include "packtune/error.hpp"
#include "packtune/test_hold.hpp"
#include "util/json_object_text.hpp"

namespace packtune {
namespace {

using json = nlohmann::json;

double metric_of(const json& value) {
  return value.is_number() ? value.get<double>() : std::numeric_limits<double>::quiet_NaN();
}

const char* kind_name(tuners::Job::Kind kind) {
  switch (kind) {
    case tuners::Job::Kind::Start: return "start";
    case tuners::Job::Kind::Resume: return "resume";
    case tuners::Job::Kind::Wait: return "wait";
    case tuners::Job::Kind::Finished: return "finished";
  }
  return "?";
}

std::string describe(const tuners::Job& job) {
  if (job.kind != tuners::Job::Kind::Start && job.kind != tuners::Job::Kind::Resume) return kind_name(job.kind);
  return fmt::format("{} trial {} to budget {:g}{} with {}", kind_name(job.kind), job.trial, job.budget,
                     job.from_trial < 0 ? std::string()
                                        : fmt::format(" from trial {}'s checkpoint at {:g}", job.from_trial,
                                                      job.from_budget),
                     tuners::to_json(job.config).dump());
}

}  // namespace

tuners::Job TunerJournal::next_job() {
  Job job = call("next_job", [&] { return tuner_.next_job(); });
  if (job.kind == Job::Kind::Wait && rules_) rules_->check_wait();
  if (job.kind == Job::Kind::Start || job.kind == Job::Kind::Resume) {
    if (rules_) rules_->check(job);
    post([this, kind = job.kind, trial = job.trial, budget = job.budget, config = job.config,
          from_trial = job.from_trial, from_budget = job.from_budget, why = job.why] {
      util::JsonObjectText entry;
      entry.add("kind", kind_name(kind))
          .add("trial", trial)
          .add("budget", budget)
          .add_json("config", ResultsWriter::config_text(config));
      if (from_trial >= 0) entry.add("from_trial", from_trial).add("from_budget", from_budget);
      // A learning sampler's reasons, for the report; a replay recomputes them, so they are not checked.
      if (!why.is_null()) entry.add_json("why", why.dump());
      write_entry("job", entry.text());
    });
    if (job.kind == Job::Kind::Resume) test_hold("driver.promoted");
  }
  return job;
}

void TunerJournal::post(RecordThread::Task write) {
  if (journal_) RecordThread::post_or_run(records_, std::move(write));
}

void TunerJournal::write(nlohmann::json entry) {
  post([this, entry = std::move(entry)] { journal_->append(entry); });
}

// The row is the report's results.jsonl line, serialized once for both files: 10,000 actors
// report tens of thousands of times a second, and serializing each row twice was a tenth of
// the driver's time.
void TunerJournal::write_entry(const char* key, std::string_view value, const Row& row) {
  const std::string line = row ? ResultsWriter::line(row->values, *row->config) : std::string();
  std::string text = "{\"";
  text += key;
  text += "\":";
  text += value;
  if (row) {
    text += ",\"row\":";
    text += line;
  }
  text += '}';
  // The journal first: a row in results.jsonl must be in the journal.
  journal_->append_text(text);
  if (row && results_) results_->append_line(line);
}

tuners::Decision TunerJournal::on_report(TrialId trial, double budget, double metric, Row row) {
  const auto decision = call("on_report", [&] { return tuner_.on_report(trial, budget, metric); });
  post([this, trial, budget, metric, decision, row = std::move(row)] {
    util::JsonObjectText report;
    report.add("trial", trial).add("budget", budget).add("metric", metric).add("stop", decision == tuners::Decision::Stop);
    // A report without a row is journaled with "row": null.
    if (row) {
      write_entry("report", report.text(), row);
    } else {
      journal_->append_text("{\"report\":" + report.text() + ",\"row\":null}");
    }
  });
  return decision;
}

void TunerJournal::on_result(TrialId trial, double budget, double metric, Row row, bool failed) {
  call("on_result", [&] { tuner_.on_result(trial, budget, metric); });
  if (rules_) rules_->result(trial, budget);
  post([this, trial, budget, metric, failed, row = std::move(row)] {
    util::JsonObjectText result;
    result.add("trial", trial).add("budget", budget).add("metric", metric);  // NaN: null, as JSON has no NaN
    if (failed) result.add("failed", true);
    write_entry("result", result.text(), row);
  });
}

void TunerJournal::on_checkpoint(TrialId trial, const std::string& path, double budget) {
  post([this, trial, path, budget] {
    write_entry("checkpoint", util::JsonObjectText().add("trial", trial).add("path", path).add("budget", budget).text());
  });
}

void TunerJournal::on_finished(std::int64_t jobs) { write({{"finished", {{"jobs", jobs}}}}); }

TunerJournal::Recovered TunerJournal::replay(const std::vector<json>& entries) {
  Recovered r;
  auto add_row = [&r](const json& row) {
    r.rows.push_back(row);
    r.wall_time = std::max(r.wall_time, row.value("wall_time", 0.0));
    auto& t = r.trials[row.at("trial").get<TrialId>()];
    t.reported = std::max(t.reported, row.at("budget").get<double>());
  };
  std::map<TrialId, std::size_t> last_job;  // the index of each trial's last job entry
  std::size_t index = 0;
  // A journal that lost or changed a line in the middle gives the tuner a result it cannot
  // place; its error must say which entry (= line) of the journal, not only the tuner's view.
  auto replaying = [&index](auto&& call) -> decltype(call()) {
    try {
      return call();
    } catch (const InputError&) {
      throw;
    } catch (const Error& e) {
      throw InputError(fmt::format("line {}: {}; the journal was damaged or edited, and the experiment cannot be "
                                   "resumed from it", index, e.what()));
    }
  };
  try {
    for (const auto& entry : entries) {
      ++index;
      if (entry.contains("job")) {
        const auto& j = entry["job"];
        Job expected;
        expected.kind = j.at("kind") == "resume" ? Job::Kind::Resume : Job::Kind::Start;
        expected.trial = j.at("trial").get<TrialId>();
        expected.budget = j.at("budget").get<double>();
        expected.config = tuners::config_from_json(j.at("config"), "journal: config");
        expected.from_trial = j.value("from_trial", TrialId{-1});
        expected.from_budget = j.value("from_budget", 0.0);
        Job job = replaying([&] { return tuner_.next_job(); });
        if (job.kind != expected.kind || job.trial != expected.trial || job.budget != expected.budget ||
            job.config != expected.config || job.from_trial != expected.from_trial ||
            (job.from_trial >= 0 && job.from_budget != expected.from_budget)) {
          // A damaged or edited journal, or a tuner plugin that is not deterministic: either way
          // the input cannot be resumed from (exit 2), and the line says where.
          throw InputError(fmt::format("line {}: the tuner did not repeat its decisions: the journal says \"{}\" but "
                                  "the tuner now says \"{}\"; --resume needs a tuner that gives the same jobs for "
                                  "the same seed and results (docs/tuners.md)",
                                  index, describe(expected), describe(job)));
        }
        if (rules_) replaying([&] { rules_->check(job); });
        last_job[job.trial] = index;
        auto& t = r.trials[job.trial];
        t.job = job;
        t.running = true;
        t.stopped = false;
      } else if (entry.contains("report")) {
        const auto& e = entry["report"];
        const auto trial = e.at("trial").get<TrialId>();
        const double metric = metric_of(e.at("metric"));
        const auto decision =
            replaying([&] { return tuner_.on_report(trial, e.at("budget").get<double>(), metric); });
        const bool stop = e.at("stop").get<bool>();
        if ((decision == tuners::Decision::Stop) != stop) {
          throw InputError(fmt::format("line {}: the tuner did not repeat its decisions: the journal says it {} trial {} "
                                  "and now it {} it; --resume needs a deterministic tuner (docs/tuners.md)",
                                  index, stop ? "stopped" : "continued", trial, stop ? "continues" : "stops"));
        }
        add_row(entry.at("row"));
        auto& t = r.trials[trial];
        t.last_metric = metric;
        t.stopped = stop;
      } else if (entry.contains("result")) {
        const auto& e = entry["result"];
        const auto trial = e.at("trial").get<TrialId>();
        const double metric = metric_of(e.at("metric"));
        replaying([&] {
          tuner_.on_result(trial, e.at("budget").get<double>(), metric);
          if (rules_) rules_->result(trial, e.at("budget").get<double>());
        });
        if (entry.contains("row")) add_row(entry["row"]);
        auto& t = r.trials[trial];
        t.running = false;
        t.stopped = false;
        t.last_metric = metric;
        ++r.results;
        if (e.value("failed", false)) ++r.failed;
      } else if (entry.contains("checkpoint")) {
        const auto& e = entry["checkpoint"];
        r.checkpoints.push_back({e.at("trial").get<TrialId>(), e.at("path").get<std::string>(),
                                 e.at("budget").get<double>()});
      } else if (entry.contains("finished")) {
        r.finished = true;
        r.finished_jobs = entry["finished"].value("jobs", std::int64_t{0});
      }
    }
  } catch (const json::exception& e) {
    throw InputError(fmt::format("line {} is not an entry packtune writes ({}); the experiment cannot be resumed",
                                 index, e.what()));
  }
  // In the order the tuner gave their last jobs: the queue a resumed driver starts from.
  std::map<std::size_t, TrialId> by_last_job;
  for (const auto& [trial, last] : last_job) by_last_job.emplace(last, trial);
  for (const auto& [i, trial] : by_last_job) {
    if (r.trials.at(trial).running) r.in_flight.push_back(r.trials.at(trial).job);
  }
  return r;
}

}  // namespace packtune
