#pragma once
// Where packtune's processes put their scratch files: the driver's ipc socket, the work folders
// of nodes, actors and the driver's own actors, and the sweep of those a killed driver left.
// One function names the folder so that all of them agree on it.
#include <filesystem>
#include <string>

namespace packtune::util {

// $TMPDIR, or /tmp when it names no folder.
std::filesystem::path temp_folder();

// A new folder for actors' local files, temp_folder()/packtune-OWNER-PID (mode 0700); its owner
// removes it when it ends. One of this user's already there is kept; anything else there (a
// file, a link, another user's folder) is an Error, as is a folder that cannot be created.
// First it removes the work folders that processes now gone left behind (killed before they
// could remove them): this user's folders packtune-OWNER-PID, of this OWNER or of actor, node,
// relay, driver or describe, whose PID is no process's.
std::string fresh_work_dir(const std::string& owner);

}  // namespace packtune::util
