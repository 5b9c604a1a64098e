#pragma once
// cereal's portable binary format (what PortableBinaryOutputArchive writes), read from bytes in
// memory with the checks a message from the network needs. cereal's own input archive trusts
// the bytes:
// - a string's or a vector's length is believed before anything is read: it resizes to it, so
//   ten bytes claiming 2^33 characters made a driver allocate and zero 8 GiB (or throw
//   std::bad_alloc). Here a length may not exceed the bytes left, since every element of every
//   container in the protocol takes at least one byte on the wire;
// - a bool is whatever byte arrives: loading 2 into a bool is undefined behaviour. Here it
//   must be 0 or 1.
// Every failure is a cereal::Exception, which decode() turns into a packtune::Error.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include <cereal/cereal.hpp>

namespace packtune::protocol {

class WireInputArchive : public cereal::InputArchive<WireInputArchive, cereal::AllowEmptyClassElision> {
 public:
  WireInputArchive(const void* data, std::size_t size)
      : InputArchive(this), next_(static_cast<const unsigned char*>(data)), end_(next_ + size) {
    std::uint8_t little = 0;
    read(&little, 1, 1);
    if (little > 1) throw cereal::Exception("not a portable binary archive (endianness byte " + std::to_string(little) + ")");
    const std::uint16_t probe = 1;
    unsigned char first = 0;
    std::memcpy(&first, &probe, 1);
    swap_ = (little == 1) != (first == 1);
  }

  std::size_t remaining() const { return static_cast<std::size_t>(end_ - next_); }

  // `size` bytes of elements of `element` bytes each, in the sender's byte order.
  void read(void* out, std::size_t size, std::size_t element) {
    // An empty vector's data() may be null, and memcpy from or to null is undefined even for
    // no bytes (found by fuzz_message under UBSan).
    if (size == 0) return;
    if (size > remaining()) {
      throw cereal::Exception("truncated: " + std::to_string(size) + " bytes wanted, " + std::to_string(remaining()) +
                              " left");
    }
    std::memcpy(out, next_, size);
    next_ += size;
    if (swap_ && element > 1) {
      auto* bytes = static_cast<unsigned char*>(out);
      for (std::size_t i = 0; i + element <= size; i += element) {
        for (std::size_t a = i, b = i + element - 1; a < b; ++a, --b) std::swap(bytes[a], bytes[b]);
      }
    }
  }

 private:
  const unsigned char* next_;
  const unsigned char* end_;
  bool swap_ = false;
};

template <class T>
std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>> CEREAL_LOAD_FUNCTION_NAME(WireInputArchive& ar,
                                                                                                  T& t) {
  ar.read(&t, sizeof t, sizeof t);
}

inline void CEREAL_LOAD_FUNCTION_NAME(WireInputArchive& ar, bool& b) {
  std::uint8_t byte = 0;
  ar.read(&byte, 1, 1);
  if (byte > 1) throw cereal::Exception("a bool of value " + std::to_string(byte));
  b = byte == 1;
}

template <class T>
void CEREAL_SERIALIZE_FUNCTION_NAME(WireInputArchive& ar, cereal::NameValuePair<T>& t) {
  ar(t.value);
}

template <class T>
void CEREAL_SERIALIZE_FUNCTION_NAME(WireInputArchive& ar, cereal::SizeTag<T>& t) {
  ar(t.size);
  if (t.size > ar.remaining()) {
    throw cereal::Exception("a length of " + std::to_string(t.size) + " with " + std::to_string(ar.remaining()) +
                            " bytes left");
  }
}

template <class T>
void CEREAL_LOAD_FUNCTION_NAME(WireInputArchive& ar, cereal::BinaryData<T>& bd) {
  using Element = std::remove_pointer_t<T>;
  ar.read(bd.data, static_cast<std::size_t>(bd.size), sizeof(Element));
}

// Reads `value` from all of `data`, then `check(value)` (which throws cereal::Exception for
// what the archive cannot tell); any failure is a ProtocolError naming `what` ("protocol
// message", "bundle of messages"). ProtocolError is protocol.hpp's: included by the caller.
template <class Failure, class T, class Check>
void read_whole(const void* data, std::size_t size, T& value, const char* what, Check check) {
  try {
    WireInputArchive archive(data, size);
    archive(value);
    if (archive.remaining() != 0) throw cereal::Exception("trailing bytes");
    check(value);
  } catch (const std::exception& e) {
    throw Failure(std::string("malformed ") + what + " (" + e.what() + "); is the peer a packtune of the same version?");
  }
}

}  // namespace packtune::protocol
