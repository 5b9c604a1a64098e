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

JsonObjectText::JsonObjectText() {
  members_.reserve(16);
  bytes_.reserve(256);
}

JsonObjectText& JsonObjectText::add_value(std::string_view key, std::string_view value) {
  if (!members_.empty() && !(key_of(members_.back()) < key)) in_order_ = false;
  Member m;
  m.key_begin = bytes_.size();
  m.key_size = key.size();
  bytes_ += key;
  m.value_begin = bytes_.size();
  m.value_size = value.size();
  bytes_ += value;
  members_.push_back(m);
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
  if (!in_order_) {
    // Insertion sort: a few members, and stable, so that of a key given twice the one added
    // last comes last and is kept.
    for (std::size_t i = 1; i < members_.size(); ++i) {
      const Member m = members_[i];
      std::size_t j = i;
      for (; j > 0 && key_of(m) < key_of(members_[j - 1]); --j) members_[j] = members_[j - 1];
      members_[j] = m;
    }
  }
  std::string out;
  out.reserve(bytes_.size() + 4 * members_.size() + 2);
  out += '{';
  for (std::size_t i = 0; i < members_.size(); ++i) {
    if (i + 1 < members_.size() && key_of(members_[i + 1]) == key_of(members_[i])) continue;
    if (out.size() > 1) out += ',';
    out += '"';
    append_escaped(out, key_of(members_[i]));
    out += "\":";
    out.append(bytes_, members_[i].value_begin, members_[i].value_size);
  }
  out += '}';
  members_.clear();
  bytes_.clear();
  in_order_ = true;
  return out;
}

}  // namespace packtune::util
