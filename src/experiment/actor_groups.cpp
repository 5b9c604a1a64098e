#include "experiment/actor_groups.hpp"

#include <cctype>

#include "packtune/error.hpp"
#include "spec/device_syntax.hpp"
#include "util/byte_size.hpp"
#include "util/printable.hpp"

namespace packtune {
namespace {

const char* const kGrammar =
    "expected COUNT, COUNTxSIZE, COUNTxDEVICE, [COUNTx]DEVICE=SIZE or a comma-separated list of them "
    "(e.g. 4, 1000x16GiB, 1000xcuda=16GiB, cpu=600MiB,cuda:0=80GiB), COUNT from 1 to 1000000";

// The group as the one line of the error shows it: no control characters, not too long.
std::string shown(const std::string& text) { return util::printable(text, 80); }

InputError refused(const std::string& group, const std::string& why) {
  return InputError("--actors: \"" + shown(group) + "\": " + why + "; " + kGrammar);
}

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

std::int64_t parse_count(const std::string& text, const std::string& group) {
  if (text.empty()) throw refused(group, "no COUNT before the x");
  std::int64_t count = 0;
  for (const char c : text) {
    if (!is_digit(c)) throw refused(group, "COUNT \"" + shown(text) + "\" is not a whole number");
    count = count * 10 + (c - '0');
    // Checked per digit: a long run of digits must not overflow before it is refused.
    if (count > kMaxPlannedActors) throw refused(group, "COUNT " + shown(text) + " is more than 1000000");
  }
  if (count < 1) throw refused(group, "COUNT must be at least 1");
  return count;
}

std::string parse_device(const std::string& text, const std::string& group) {
  if (text.empty()) throw refused(group, "no DEVICE");
  // The planner sizes actors by what they are; "auto" says which only where an actor starts.
  if (text == "auto") throw refused(group, "DEVICE auto is decided where an actor starts; name cpu, cuda or cuda:N");
  try {
    spec::check_device_syntax(text);
  } catch (const InputError&) {
    throw refused(group, "unknown DEVICE \"" + shown(text) + "\"");
  }
  return text;
}

std::int64_t parse_size(const std::string& text, const std::string& group) {
  if (text.empty()) throw refused(group, "no SIZE after the =");
  for (const char c : text) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '+' && c != '-') {
      throw refused(group, "SIZE \"" + shown(text) + "\" is not a memory size");
    }
  }
  try {
    return util::parse_byte_size(text, "SIZE");
  } catch (const InputError&) {
    throw refused(group, "SIZE \"" + shown(text) + "\" is not a memory size (a positive number with a unit: 600MiB, 16GiB)");
  }
}

ActorGroup parse_group(const std::string& group) {
  ActorGroup g;
  if (group.empty()) throw refused(group, "an empty group");
  std::string rest = group;
  const auto x = group.find('x');
  // A device never holds an x, and a size only in the COUNTxSIZE form's separator.
  if (x != std::string::npos) {
    g.count = parse_count(group.substr(0, x), group);
    rest = group.substr(x + 1);
    if (rest.empty()) throw refused(group, "nothing after the x");
  } else if (is_digit(group.front()) && group.find('=') == std::string::npos) {
    g.count = parse_count(group, group);
    return g;
  }
  const auto eq = rest.find('=');
  if (eq != std::string::npos) {
    g.device = parse_device(rest.substr(0, eq), group);
    g.capacity_bytes = parse_size(rest.substr(eq + 1), group);
  } else if (is_digit(rest.front()) || rest.front() == '.') {
    if (x == std::string::npos) throw refused(group, "a SIZE needs a COUNTx or DEVICE= before it");
    g.capacity_bytes = parse_size(rest, group);
  } else {
    g.device = parse_device(rest, group);
    if (x == std::string::npos) throw refused(group, "a DEVICE alone says neither how many nor how large");
  }
  return g;
}

}  // namespace

std::vector<ActorGroup> parse_actor_groups(const std::string& text) {
  std::vector<ActorGroup> groups;
  std::int64_t total = 0;
  std::size_t begin = 0;
  while (true) {
    const auto end = std::min(text.find(',', begin), text.size());
    groups.push_back(parse_group(text.substr(begin, end - begin)));
    total += groups.back().count;
    if (total > kMaxPlannedActors) {
      throw InputError("--actors: \"" + shown(text) + "\": more than 1000000 actors in all; " + kGrammar);
    }
    if (end == text.size()) break;
    begin = end + 1;
  }
  return groups;
}

}  // namespace packtune
