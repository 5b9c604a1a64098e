#pragma once
// Memory sizes as users write them in configs and on command lines ("600MiB", "16GiB"): the
// config's actor_memory and the SIZE of an --actors group read them alike.
#include <cstdint>
#include <string>

namespace packtune::util {

// Parses "600MiB", "16GiB", "1.5GB", "1000000" (bytes); throws InputError naming `where`.
std::int64_t parse_byte_size(const std::string& text, const std::string& where);

}  // namespace packtune::util
