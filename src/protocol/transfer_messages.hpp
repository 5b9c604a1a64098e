#pragma once
// The protocol's messages for checkpoint files over ZeroMQ (file_transfer.hpp). Whoever needs
// a file pulls it in chunks, with at most a window of requests outstanding: the holder answers
// each FetchChunk with one Chunk, so neither end ever buffers more than the window. An actor
// pulls the checkpoints it resumes from the driver's store; for the checkpoints it writes it
// sends an Offer and the driver pulls them into its store.
#include <cstdint>
#include <string>

namespace packtune::protocol {

// requester -> holder: `length` bytes of the file `name` from `offset`.
struct FetchChunk {
  std::uint64_t transfer = 0;
  std::string name;
  std::uint64_t offset = 0;
  std::uint32_t length = 0;
  std::string token;  // actor -> driver: its Welcome.transfer_token; empty the other way

  template <class Archive>
  void serialize(Archive& ar) { ar(transfer, name, offset, length, token); }
};

// holder -> requester: the file's size and, in a second frame after this one, the bytes at
// `offset` (fewer than asked at the end of the file); or why it cannot be read.
struct Chunk {
  std::uint64_t transfer = 0;
  std::uint64_t offset = 0;
  std::uint64_t total = 0;
  std::string error;

  template <class Archive>
  void serialize(Archive& ar) { ar(transfer, offset, total, error); }
};

// actor -> driver: a checkpoint of `size` bytes for the driver's store; pull it.
struct Offer {
  std::uint64_t transfer = 0;
  std::string name;
  std::uint64_t size = 0;
  std::string token;  // the actor's Welcome.transfer_token

  template <class Archive>
  void serialize(Archive& ar) { ar(transfer, name, size, token); }
};

// driver -> actor: the offered file is in the store at `path` and verified, or `error`.
struct Stored {
  std::uint64_t transfer = 0;
  std::string path;
  std::string error;

  template <class Archive>
  void serialize(Archive& ar) { ar(transfer, path, error); }
};

}  // namespace packtune::protocol
