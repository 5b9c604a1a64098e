#pragma once
// The input of fuzz_handshake: a conversation of several peers with the driver, as records
// [peer: 1 byte][length: 2 bytes, little-endian][message: length bytes]; a short last record
// takes what is left. make_seeds writes real conversations in this form.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace packtune::fuzz {

struct Record {
  int peer = 0;
  std::string bytes;
};

inline std::vector<Record> split_records(const std::uint8_t* data, std::size_t size) {
  std::vector<Record> out;
  std::size_t at = 0;
  while (at + 3 <= size) {
    const std::size_t length = data[at + 1] | (std::size_t{data[at + 2]} << 8);
    const std::size_t start = at + 3;
    const std::size_t take = std::min(length, size - start);
    out.push_back({data[at], std::string(reinterpret_cast<const char*>(data + start), take)});
    at = start + take;
  }
  return out;
}

inline void append_record(std::string& out, int peer, const std::string& bytes) {
  out += static_cast<char>(peer);
  out += static_cast<char>(bytes.size() & 0xff);
  out += static_cast<char>((bytes.size() >> 8) & 0xff);
  out += bytes;
}

}  // namespace packtune::fuzz
