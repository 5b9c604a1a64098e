#pragma once
// `packtune config --markdown`: the config table (experiment/config_keys.def) as the Markdown
// page docs/config.md, which the test cli/config_doc compares with the file in the tree.
#include <string>
#include <vector>

namespace packtune::cli {

// `args` are the arguments after "config"; returns the exit status.
int run_config_command(const std::vector<std::string>& args);

}  // namespace packtune::cli
