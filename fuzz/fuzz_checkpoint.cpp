// Checkpoint files with flipped, cut and appended bytes: the driver verifies every checkpoint
// an actor sends it, and an actor reads what it resumes from, so a damaged or forged file must
// be refused with a packtune::Error (InputError), never crash, hang or allocate without bound.
//
// Each input is written to a file and read back with read_checkpoint, in process, so that
// libFuzzer sees the coverage of packtune's reader. Debian's HDF5 1.10 itself crashes on some
// inputs (its global heap, object headers, metadata cache; docs/fuzzing.md): fuzz.sh runs this
// target in libFuzzer's fork mode, re-runs each crash, and counts it as HDF5's own only when
// the report's first frame is in libhdf5 and the driver's path (verify_checkpoint, a child
// process) refuses the input with an InputError; any other crash fails the run.
//
// The seeds (make_seeds)
// are real checkpoints written by write_checkpoint; the custom mutator damages them the ways
// files get damaged (bits flipped, cut short, bytes appended) and otherwise leaves the input
// to libFuzzer's own mutations.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include <hdf5.h>

#include "actors/checkpoint_file.hpp"
#include "actors/checkpoint_verify.hpp"
#include "packtune/error.hpp"

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace {

std::string file_path;
bool verify_mode = false;
double verify_seconds = 10;

// Overwrites, then cuts to size: a file truncated to zero and rewritten is flushed to disk on
// close by ext4 (its replace-by-truncate heuristic), a disk write for every input.
void write_input(const std::uint8_t* data, std::size_t size) {
  const int fd = ::open(file_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) std::abort();
  std::size_t done = 0;
  while (done < size) {
    const auto n = ::write(fd, data + done, size - done);
    if (n <= 0) std::abort();
    done += static_cast<std::size_t>(n);
  }
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) std::abort();
  ::close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // A file of its own per process (libFuzzer's -jobs run several), on a RAM disk when there is one.
  const char* dir = std::getenv("PACKTUNE_FUZZ_DIR");
  std::filesystem::path base = dir ? dir : std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
  if (const char* verify = std::getenv("PACKTUNE_FUZZ_VERIFY")) {
    verify_mode = true;
    verify_seconds = std::atof(verify) > 0 ? std::atof(verify) : 10;
  }
  // HDF5 frees a block larger than its free lists' limits (64 KiB a list) to the system, so each
  // file opened allocated, page-faulted and zeroed its 512 KiB metadata cache afresh (under
  // ASan's allocator an mmap each time): 40% of an input's time. Unlimited lists reuse it.
  H5set_free_list_limits(-1, -1, -1, -1, -1, -1);
  file_path = (base / ("packtune-fuzz-checkpoint-" + std::to_string(::getpid()) + ".h5")).string();
  std::atexit([] { ::unlink(file_path.c_str()); });
  return 0;
}

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t max_size,
                                               unsigned int seed) {
  std::minstd_rand rng(seed);
  switch (rng() % 4) {
    case 0:  // flipped bits: a bad disk, a bad link
      if (size == 0) break;
      for (unsigned n = 1 + rng() % 8; n > 0; --n) data[rng() % size] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
      return size;
    case 1:  // cut short: a copy or a transfer that stopped
      if (size == 0) break;
      return rng() % size;
    case 2: {  // bytes appended: a file written over a longer one, a transfer that went on
      const std::size_t room = max_size > size ? max_size - size : 0;
      const std::size_t n = room == 0 ? 0 : 1 + rng() % std::min<std::size_t>(room, 4096);
      for (std::size_t i = 0; i < n; ++i) data[size + i] = static_cast<std::uint8_t>(rng());
      return size + n;
    }
    default:
      break;
  }
  return LLVMFuzzerMutate(data, size, max_size);
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  write_input(data, size);
  try {
    // PACKTUNE_FUZZ_VERIFY=SECONDS: the driver's path for uploads, in a child process given
    // that long (fuzz.sh re-runs each crash this way: a crash of HDF5 itself must end there
    // as an InputError).
    if (verify_mode) {
      packtune::actors::verify_checkpoint(file_path, verify_seconds);
    } else {
      const auto checkpoint = packtune::actors::read_checkpoint(file_path);
      (void)checkpoint.bytes();
    }
  } catch (const packtune::Error&) {
  }
  return 0;
}
