#include "experiment/report_page.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <utility>
#include <vector>

#include "experiment/report_data.hpp"
#include "experiment/results_folder.hpp"
#include "packtune/error.hpp"

namespace packtune::report {

// Embedded at build time by cmake/EmbedText.cmake (src/CMakeLists.txt).
std::string_view plotly_js();
std::string_view report_js();
std::string_view report_html();

namespace {

namespace fs = std::filesystem;

struct Fill {
  std::string_view marker;
  std::string_view text;
};

// Each marker's place is found in the template alone, so inserted text (a config holding a
// marker, plotly.js) is never searched.
std::string fill(std::string_view page, std::vector<Fill> fills) {
  std::vector<std::pair<std::size_t, const Fill*>> at;
  for (const auto& f : fills) {
    const auto where = page.find(f.marker);
    if (where == std::string_view::npos) throw Error("report.html template: no " + std::string(f.marker) + " (a build error)");
    at.emplace_back(where, &f);
  }
  std::sort(at.begin(), at.end());
  std::string out;
  std::size_t done = 0;
  for (const auto& [where, f] : at) {
    out.append(page.substr(done, where - done));
    out.append(f->text);
    done = where + f->marker.size();
  }
  out.append(page.substr(done));
  return out;
}

// Inside <script>, "</" could close the element early: a trial's config is user text.
std::string script_safe(const std::string& json_text) {
  std::string out;
  out.reserve(json_text.size());
  for (std::size_t i = 0; i < json_text.size(); ++i) {
    out += json_text[i];
    if (json_text[i] == '<' && i + 1 < json_text.size() && json_text[i + 1] == '/') out += '\\';
  }
  return out;
}

std::string html_escape(const std::string& text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::string render_page(const nlohmann::json& data, bool live) {
  const auto title = html_escape(data.value("name", std::string("experiment")));
  const auto block = script_safe(data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  return fill(report_html(), {{"<!--packtune:title-->", title},
                              {"<!--packtune:refresh-->", live ? "<meta http-equiv=\"refresh\" content=\"10\">" : ""},
                              {"/*packtune:data*/", block},
                              {"/*packtune:report_js*/", report_js()},
                              {"/*packtune:plotly_js*/", plotly_js()}});
}

std::string write_report(const std::string& dir, const std::string& output, bool live, std::uintmax_t keep_free) {
  const std::string target = output.empty() ? results_folder::path(dir, results_folder::kReport) : output;
  if (std::error_code ec; fs::is_directory(target, ec)) {
    throw InputError(target + ": is a folder; give --output a file name, such as " +
                     (fs::path(target) / results_folder::kReport).string());
  }
  const std::string page = render_page(build_report_data(dir), live);
  if (keep_free > 0) {
    std::error_code ec;
    const auto space = fs::space(fs::path(target).parent_path().empty() ? "." : fs::path(target).parent_path(), ec);
    if (!ec && space.available < page.size() + keep_free) {
      throw Error(target + ": left unwritten, the disk is nearly full (" + std::to_string(space.available >> 20) +
                  " MiB free); `packtune report " + dir + "` writes it later");
    }
  }
  // Unique per process: the driver and a `packtune report` may write the same file at once.
  const std::string tmp = target + "." + std::to_string(::getpid()) + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(target + ": cannot write there (" + std::strerror(errno) + "); give --output FILE");
    out.write(page.data(), static_cast<std::streamsize>(page.size()));
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw Error(target + ": cannot write (" + std::strerror(errno) + "); is the disk full?");
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error(target + ": cannot replace it (" + ec.message() + ")");
  }
  return target;
}

}  // namespace packtune::report
