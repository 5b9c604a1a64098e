#pragma once
// The config's blocks that the table cannot read row by row (PACKTUNE_CONFIG_BLOCK in
// config_keys.def): budget, tuner, data, model and space. Their keys depend on each other
// (budget.min defaults to max, data's keys on its format) or belong to another module's
// parser (the search space, the tuner's own settings), so each has a reader written by hand.
// The table calls read_<name> for the row of that name.
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "experiment/config_fields.hpp"
#include "experiment/experiment_config.hpp"

namespace packtune::config_table {

// Each reads its block from the top-level object `top` into `c`, if the config has it;
// `path` is the config file's, for the files the block names relative to it.
void read_budget(Fields& top, ExperimentConfig& c, const std::string& path);
void read_tuner(Fields& top, ExperimentConfig& c, const std::string& path);
void read_data(Fields& top, ExperimentConfig& c, const std::string& path);
void read_model(Fields& top, ExperimentConfig& c, const std::string& path);
void read_space(Fields& top, ExperimentConfig& c, const std::string& path);
void read_export(Fields& top, ExperimentConfig& c, const std::string& path);

// The data block as the experiment used it: the keys its format reads, paths absolute.
nlohmann::json data_as_run(const datasets::DataOptions& data);
// The export block as the experiment used it (absolute stores), or null when it exports nothing.
nlohmann::json export_as_run(const ExperimentConfig& c);

// An MLflow store as export.mlflow records it: a URI (a scheme and a colon: http://, sqlite://,
// databricks://) as it is, since only MLflow knows what it means; anything else a folder for a
// local store, made absolute against `base`, so that --resume from another folder writes into
// the same store. A URI with a password in it is an InputError naming `key`: config.json and
// the journal would keep it, where MLflow's own variables keep it out of the results.
std::string mlflow_store(const std::string& value, const std::filesystem::path& base, const std::string& key);
// A folder made absolute against `base`.
std::string folder_against(const std::string& value, const std::filesystem::path& base);

}  // namespace packtune::config_table
