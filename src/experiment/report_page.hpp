#pragma once
// report.html: one self-contained page (plotly.js, report.js and the data inlined; nothing is
// fetched when it opens, so it works offline and can be mailed or archived with the run).
// `packtune report DIR` writes it, and the driver rewrites it during a run
// (driver/live_report.hpp); both through write_report, so the two never differ.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace packtune::report {

// The page around `data` (report_data.hpp). `live`: the experiment is running and the file
// will be rewritten, so the page reloads itself every few seconds.
std::string render_page(const nlohmann::json& data, bool live);

// Builds the data of the experiment in `dir` and writes the page to `output` (empty:
// DIR/report.html) through a temporary and a rename, so a browser reloading it never reads
// half a page. Returns the path written. Throws InputError for a bad `dir` (report_data.hpp)
// and Error when the page cannot be written. `keep_free`: bytes the file system must still
// have after the page is written, or Error and nothing written (the driver's copy must never
// be what fills the disk its journal needs).
std::string write_report(const std::string& dir, const std::string& output = "", bool live = false,
                         std::uintmax_t keep_free = 0);

}  // namespace packtune::report
