// DataOptions as JSON: the driver sends them to every actor (protocol::ExperimentSpec::data)
// and records them in the config as run.
#include <nlohmann/json.hpp>

#include "datasets/data_source.hpp"
#include "packtune/error.hpp"

namespace packtune::datasets {

void to_json(nlohmann::json& j, const DataOptions& o) {
  j = {{"format", to_string(o.format)},
       {"task", to_string(o.task)},
       {"name", o.name},
       {"dir", o.dir},
       {"path", o.path},
       {"x", o.x},
       {"y", o.y},
       {"test_path", o.test_path},
       {"test_x", o.test_x},
       {"test_y", o.test_y},
       {"train_size", o.train_size},
       {"validation_size", o.validation_size},
       {"normalize", o.normalize},
       {"order", order_name(o.order_per_trial)},
       {"augment",
        {{"crop_padding", o.augment.crop_padding}, {"flip", o.augment.flip}, {"per_trial", o.augment.per_trial}}}};
}

void from_json(const nlohmann::json& j, DataOptions& o) {
  try {
    o.format = parse_data_format(j.at("format").get<std::string>(), "data.format");
    const auto task = j.at("task").get<std::string>();
    if (task != "classification" && task != "regression") {
      throw InputError("data.task: unknown task \"" + task + "\"; expected classification or regression");
    }
    o.task = task == "classification" ? Task::Classification : Task::Regression;
    for (auto [key, member] : {std::pair{"name", &o.name}, {"dir", &o.dir}, {"path", &o.path}, {"x", &o.x},
                               {"y", &o.y}, {"test_path", &o.test_path}, {"test_x", &o.test_x},
                               {"test_y", &o.test_y}}) {
      *member = j.at(key).get<std::string>();
    }
    o.train_size = j.at("train_size").get<std::uint32_t>();
    o.validation_size = j.at("validation_size").get<std::uint32_t>();
    o.normalize = j.at("normalize").get<bool>();
    // Absent from the config as run of a run made before the key existed.
    o.order_per_trial = parse_data_order(j.value("order", std::string("shared")), "data.order");
    o.augment.crop_padding = j.at("augment").at("crop_padding").get<int>();
    o.augment.flip = j.at("augment").at("flip").get<bool>();
    o.augment.per_trial = j.at("augment").at("per_trial").get<bool>();
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("data: malformed data options (") + e.what() + ")");
  }
}

}  // namespace packtune::datasets
