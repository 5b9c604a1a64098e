#pragma once
// One JSON object written as text member by member, exactly as nlohmann::json's dump() writes
// the same object: keys in byte order (a key given twice keeps its last value), numbers as its
// shortest round trip, NaN and infinities as null, strings escaped alike (invalid UTF-8 throws
// its type_error). The driver writes a results row and journal entries for every job; building
// each as an nlohmann::json first (a tree node per member, walked again to dump it, then freed)
// was a fifth of its CPU at 10,000 actors. Oracle-tested against nlohmann::json.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace packtune::util {

class JsonObjectText {
 public:
  JsonObjectText();
  JsonObjectText& add(std::string_view key, double value);
  JsonObjectText& add(std::string_view key, std::int64_t value);
  JsonObjectText& add(std::string_view key, int value) { return add(key, static_cast<std::int64_t>(value)); }
  JsonObjectText& add(std::string_view key, bool value);
  JsonObjectText& add(std::string_view key, std::string_view value);
  JsonObjectText& add(std::string_view key, const char* value) { return add(key, std::string_view(value)); }
  JsonObjectText& add(std::string_view key, const std::string& value) { return add(key, std::string_view(value)); }
  JsonObjectText& add_null(std::string_view key);
  // `json`: the text of one JSON value as dump() writes it (another object's text()).
  JsonObjectText& add_json(std::string_view key, std::string_view json);

  // The object's text; the writer is empty again after.
  std::string text();

 private:
  struct Member {  // where its key and value text lie in bytes_
    std::size_t key_begin = 0;
    std::size_t key_size = 0;
    std::size_t value_begin = 0;
    std::size_t value_size = 0;
  };
  std::string_view key_of(const Member& m) const { return std::string_view(bytes_).substr(m.key_begin, m.key_size); }
  JsonObjectText& add_value(std::string_view key, std::string_view value);

  // A handful of members a row: one buffer for all their bytes, no allocation per member.
  std::vector<Member> members_;
  std::string bytes_;
  bool in_order_ = true;  // every key so far after the one before (a std::map's): no sort
};

}  // namespace packtune::util
