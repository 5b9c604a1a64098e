#include "protocol/metric_names.hpp"

#include <algorithm>

namespace packtune::protocol {

const std::vector<std::string>& reported_metrics(datasets::Task task, bool test) {
  static const std::vector<std::string> classification{"val_accuracy", "val_loss", "train_loss"};
  static const std::vector<std::string> regression{"val_mse", "val_mae", "val_loss", "train_loss"};
  static const std::vector<std::string> classification_test{"test_accuracy", "test_loss"};
  static const std::vector<std::string> regression_test{"test_mse", "test_mae", "test_loss"};
  if (task == datasets::Task::Regression) return test ? regression_test : regression;
  return test ? classification_test : classification;
}

bool known_metric(const std::string& name, bool test) {
  for (auto task : {datasets::Task::Classification, datasets::Task::Regression}) {
    const auto& names = reported_metrics(task, test);
    if (std::find(names.begin(), names.end(), name) != names.end()) return true;
  }
  return false;
}

bool maximised(const std::string& metric) { return metric.size() >= 8 && metric.rfind("accuracy") == metric.size() - 8; }

}  // namespace packtune::protocol
