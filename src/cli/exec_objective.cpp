#include "cli/exec_objective.hpp"

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/option_values.hpp"
#include "packtune/error.hpp"
#include "tuners/tuner_settings.hpp"
#include "util/printable.hpp"

namespace packtune::cli {
namespace {

// Checked here, before the member that starts the process is built.
std::vector<std::string> shell_command(const std::string& command) {
  if (command.find_first_not_of(" \t\n") == std::string::npos) {
    throw InputError("--objective: expected exec:CMD with a command after \"exec:\"");
  }
  return {"/bin/sh", "-c", command};
}

// How messages name it: the option as given, made one printable line.
std::string objective_name(const std::string& command) {
  return "--objective exec:" + util::printable(command, 200);
}

}  // namespace

ExecObjective::ExecObjective(const std::string& command, double timeout_seconds) try
    : command_(command), timeout_seconds_(timeout_seconds), process_(shell_command(command)) {
} catch (const InputError&) {
  throw;
} catch (const Error& e) {
  throw Error(objective_name(command) + ": " + e.what());
}

ExecObjective::~ExecObjective() { process_.finish(timeout_seconds_); }

double ExecObjective::evaluate(std::int64_t index, const tuners::TrialConfig& config, double budget) {
  return evaluate_from(index, config, 0, budget).metric;
}

tuners::Evaluation ExecObjective::evaluate_from(std::int64_t index, const tuners::TrialConfig& config,
                                                double from, double budget) {
  const nlohmann::ordered_json request = {{"trial", index},
                                          {"config", nlohmann::ordered_json(tuners::to_json(config))},
                                          {"budget", number_json(budget)},
                                          {"from", number_json(from)}};
  const auto answer = process_.ask(request.dump(), timeout_seconds_);
  if (answer.outcome == util::LineProcess::Outcome::TimedOut) {
    fail(index, budget,
         "no answer within " + tuners::number_text(timeout_seconds_) +
             " s (--objective-timeout); does it flush its output after each line?");
  }
  if (answer.outcome == util::LineProcess::Outcome::Closed) {
    // Its output closed: it is exiting, or has, and its status says why.
    fail(index, budget, "its output ended before an answer: it " + process_.finish(timeout_seconds_));
  }
  const auto shown = "\"" + util::printable(answer.line, 200) + "\"";
  const auto parsed = nlohmann::json::parse(answer.line, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    fail(index, budget, "its answer is not a JSON object: " + shown);
  }
  const auto metric = parsed.find("metric");
  if (metric == parsed.end() || !metric->is_number() || !std::isfinite(metric->get<double>())) {
    fail(index, budget, "its answer has no finite number \"metric\": " + shown);
  }
  tuners::Evaluation evaluation{metric->get<double>(), std::nullopt};
  if (const auto cost = parsed.find("cost"); cost != parsed.end()) {
    if (!cost->is_number() || !std::isfinite(cost->get<double>()) || cost->get<double>() < 0) {
      fail(index, budget, "its \"cost\" is not a number of seconds >= 0: " + shown);
    }
    evaluation.cost = cost->get<double>();
  }
  return evaluation;
}

void ExecObjective::fail(std::int64_t index, double budget, const std::string& why) {
  process_.finish(0);
  throw Error(objective_name(command_) + ": trial " + std::to_string(index) +
              " at budget " + tuners::number_text(budget) + ": " + why);
}

}  // namespace packtune::cli
