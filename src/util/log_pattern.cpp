#include "util/log_pattern.hpp"

#include <memory>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/sink.h>
#include <spdlog/spdlog.h>

namespace packtune::util {
namespace {

void append_loggable(std::string_view message, spdlog::memory_buf_t& dest) {
  const std::size_t n = std::min(message.size(), kMaxLogMessage);
  // Runs of bytes that stay are appended whole: a byte at a time was 1.5% of the driver's
  // loop at 10,000 actors, which logs a line per job.
  const char* data = message.data();
  std::size_t run = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(message[i]);
    // Bytes from 0x80 stay: UTF-8 in paths and names. C0 controls and DEL are what moves a
    // terminal or breaks a line.
    if ((c < 0x20 && c != '\t') || c == 0x7f) {
      dest.append(data + run, data + i);
      dest.push_back('?');
      run = i + 1;
    }
  }
  dest.append(data + run, data + n);
  if (message.size() > n) {
    const auto more = fmt::format("... ({} more bytes)", message.size() - n);
    dest.append(more.data(), more.data() + more.size());
  }
}

class LoggableMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    append_loggable(std::string_view(msg.payload.data(), msg.payload.size()), dest);
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<LoggableMessage>(); }
};

std::unique_ptr<spdlog::formatter> formatter(const std::string& pattern) {
  auto f = std::make_unique<spdlog::pattern_formatter>();
  f->add_flag<LoggableMessage>('*').set_pattern(pattern);
  return f;
}

}  // namespace

std::string loggable(std::string_view message) {
  spdlog::memory_buf_t buf;
  append_loggable(message, buf);
  return std::string(buf.data(), buf.size());
}

void use_log_pattern(const std::string& pattern) { spdlog::set_formatter(formatter(pattern)); }

void use_log_pattern(spdlog::sinks::sink& sink, const std::string& pattern) { sink.set_formatter(formatter(pattern)); }

}  // namespace packtune::util
