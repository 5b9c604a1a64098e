#pragma once
// What a run writes into its results folder (--out), each name declared once: the driver, the
// results writer, the report, export and --resume take their paths here, and a new run refuses
// a folder that holds any of them (ResultsWriter::check_fresh). A new file a run writes is
// added here, and with it to what a new run refuses.
#include <array>
#include <filesystem>
#include <string>
#include <string_view>

namespace packtune::results_folder {

inline constexpr std::string_view kJournal = "journal.jsonl";  // what --resume replays
inline constexpr std::string_view kResults = "results.jsonl";  // one row per report
inline constexpr std::string_view kConfig = "config.json";     // the config as run
inline constexpr std::string_view kBest = "best.json";
inline constexpr std::string_view kReport = "report.html";
inline constexpr std::string_view kDriverLog = "driver.log";
inline constexpr std::string_view kCheckpoints = "checkpoints";  // a folder
inline constexpr std::string_view kLogs = "logs";                // a folder: the local actors' logs

// Every name above, the journal first: it is an earlier run's record even without the rest.
inline constexpr std::array<std::string_view, 8> kAll = {kJournal, kResults, kConfig,      kBest,
                                                         kReport,  kDriverLog, kCheckpoints, kLogs};

// DIR/NAME.
inline std::string path(const std::string& dir, std::string_view name) {
  return (std::filesystem::path(dir) / name).string();
}

}  // namespace packtune::results_folder
