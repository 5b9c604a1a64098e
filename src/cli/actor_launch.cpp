#include "cli/actor_launch.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "node/actor_supervisor.hpp"
#include "packtune/error.hpp"

namespace packtune::cli {

std::string actor_executable() {
  return (std::filesystem::path(self_executable()).parent_path() / "packtune-actor").string();
}

void exec_actor(const std::string& argv0, const std::vector<std::string>& args) {
  const auto path = actor_executable();
  std::string command = "actor";
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(argv0.c_str()));
  argv.push_back(command.data());
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv(path.c_str(), argv.data());
  const int err = errno;
  throw Error("actor: cannot start " + path + ": " + std::strerror(err) +
              " (packtune-actor is built and installed beside packtune)");
}

}  // namespace packtune::cli
