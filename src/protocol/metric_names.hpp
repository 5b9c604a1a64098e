#pragma once
// The metrics actors report, by task: what a config's `metric` may name, what the driver admits
// in an actor's report, and what the summary, report page and CSV show. The training engine
// (actors/fused_group.cpp) produces exactly these names.
#include <string>
#include <vector>

#include "datasets/dataset.hpp"

namespace packtune::protocol {

// Validation metrics and train_loss (prefix "val_"), or the test split's (prefix "test_"),
// of a task. The first of the validation metrics is a run's default `metric`.
const std::vector<std::string>& reported_metrics(datasets::Task task, bool test);

// Whether any task reports this metric.
bool known_metric(const std::string& name, bool test);

// Whether larger is better: accuracies are maximised, losses and errors minimised.
bool maximised(const std::string& metric);

}  // namespace packtune::protocol
