#pragma once
// cereal's portable binary archive written straight into a std::string, through one stream per
// thread that is reused: a std::ostringstream built for each message (its locale, its buffer,
// then a copy of what it holds) cost more than encoding the message did, at 30,000 messages a
// second in the driver.
#include <ostream>
#include <streambuf>
#include <string>

#include <cereal/archives/portable_binary.hpp>

namespace packtune::protocol {

namespace detail {

class AppendBuffer : public std::streambuf {
 public:
  std::string* out = nullptr;

 protected:
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    out->append(s, static_cast<std::size_t>(n));
    return n;
  }
  int_type overflow(int_type c) override {
    if (!traits_type::eq_int_type(c, traits_type::eof())) out->push_back(traits_type::to_char_type(c));
    return traits_type::not_eof(c);
  }
};

}  // namespace detail

template <class T>
std::string encode_portable(const T& value) {
  thread_local detail::AppendBuffer buffer;
  thread_local std::ostream stream(&buffer);
  std::string out;
  buffer.out = &out;
  {
    cereal::PortableBinaryOutputArchive archive(stream);
    archive(value);
  }
  buffer.out = nullptr;
  return out;
}

}  // namespace packtune::protocol
