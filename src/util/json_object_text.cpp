#include "util/json_object_text.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

#include <nlohmann/json.hpp>

namespace packtune::util {
namespace {

// Plain printable ASCII needs no escaping; anything else is escaped (and its UTF-8 checked)
// by nlohmann::json itself.
bool plain(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
}

// `s` as a JSON string, without its quotes.
void append_escaped(std::string& out, std::string_view s) {
  if (plain(s)) {
    out += s;
    return;
  }
  const auto quoted = nlohmann::json(std::string(s)).dump();
  out.append(quoted, 1, quoted.size() - 2);
}

}  // namespace

JsonObjectText& JsonObjectText::add_value(std::string_view key, std::string_view value) {
  Member m;
  m.key = key;
  m.begin = values_.size();
  m.size = value.size();
  values_ += value;
  members_.push_back(std::move(m));
  return *this;
}

JsonObjectText& JsonObjectText::add(std::string_view key, double value) {
  if (!std::isfinite(value)) return add_null(key);
  std::array<char, 64> buffer{};
  // nlohmann's own shortest round trip (serializer::dump_float), so the text is dump()'s.
  const char* end = nlohmann::detail::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  return add_value(key, std::string_view(buffer.data(), static_cast<std::size_t>(end - buffer.data())));
}

JsonObjectText& JsonObjectText::add(std::string_view key, std::int64_t value) {
  std::array<char, 24> buffer{};
  const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  return add_value(key, std::string_view(buffer.data(), static_cast<std::size_t>(end - buffer.data())));
}

JsonObjectText& JsonObjectText::add(std::string_view key, bool value) {
  return add_value(key, value ? "true" : "false");
}

JsonObjectText& JsonObjectText::add(std::string_view key, std::string_view value) {
  std::string quoted = "\"";
  append_escaped(quoted, value);
  quoted += '"';
  return add_value(key, quoted);
}

JsonObjectText& JsonObjectText::add_null(std::string_view key) { return add_value(key, "null"); }

JsonObjectText& JsonObjectText::add_json(std::string_view key, std::string_view json) { return add_value(key, json); }

std::string JsonObjectText::text() {
  // Stable: of a key given twice, the one added last comes last and is kept.
  std::stable_sort(members_.begin(), members_.end(), [](const Member& a, const Member& b) { return a.key < b.key; });
  std::string out = "{";
  for (std::size_t i = 0; i < members_.size(); ++i) {
    if (i + 1 < members_.size() && members_[i + 1].key == members_[i].key) continue;
    if (out.size() > 1) out += ',';
    out += '"';
    append_escaped(out, members_[i].key);
    out += "\":";
    out.append(values_, members_[i].begin, members_[i].size);
  }
  out += '}';
  members_.clear();
  values_.clear();
  return out;
}

}  // namespace packtune::util
