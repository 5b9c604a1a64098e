#include "actor_process/logging.hpp"

#include <spdlog/spdlog.h>

namespace packtune::actor_process::logging {

void write(Level level, const std::string& message) {
  switch (level) {
    case Level::debug: spdlog::debug("{}", message); break;
    case Level::info: spdlog::info("{}", message); break;
    case Level::warn: spdlog::warn("{}", message); break;
    case Level::error: spdlog::error("{}", message); break;
  }
}

}  // namespace packtune::actor_process::logging
