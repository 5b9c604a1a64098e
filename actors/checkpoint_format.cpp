#include "actors/checkpoint_format.hpp"

#include <zlib.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace packtune::actors {
namespace {

std::string hex_bits(double value) {
  std::uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  char text[32];
  std::snprintf(text, sizeof text, "%016" PRIx64, bits);
  return text;
}

}  // namespace

void silence_hdf5() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

std::uint32_t crc_of(const unsigned char* data, std::size_t size) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes uInt lengths; feed large buffers in pieces.
  constexpr std::size_t piece = std::size_t{1} << 30;
  for (std::size_t done = 0; done < size; done += piece) {
    crc = crc32(crc, data + done, static_cast<uInt>(std::min(piece, size - done)));
  }
  return static_cast<std::uint32_t>(crc);
}

std::uint32_t manifest_checksum(const TrialCheckpoint& c, std::vector<TensorEntry> tensors) {
  std::sort(tensors.begin(), tensors.end(),
            [](const TensorEntry& a, const TensorEntry& b) { return a.path < b.path; });
  std::ostringstream m;
  m << kCheckpointFormat << " " << kCheckpointFormatVersion << "\ntrial " << c.trial << "\nbudget "
    << hex_bits(c.budget) << "\nstep " << c.step << "\nseed " << c.seed << "\nconfig "
    << c.config.dump() << "\nmetrics " << c.metrics.dump() << "\noptimizer " << c.optimizer
    << " " << c.optimizer_steps << "\ntrain_loss " << hex_bits(c.train_loss_sum) << " "
    << c.train_loss_count << "\n";
  for (const auto& t : tensors) {
    m << t.path << " " << to_string(t.type);
    for (auto d : t.shape) m << " " << d;
    m << " " << t.crc << "\n";
  }
  const auto text = m.str();
  return crc_of(reinterpret_cast<const unsigned char*>(text.data()), text.size());
}

hid_t file_type(TensorType type) { return type == TensorType::Float32 ? H5T_IEEE_F32LE : H5T_STD_I64LE; }
hid_t memory_type(TensorType type) { return type == TensorType::Float32 ? H5T_NATIVE_FLOAT : H5T_NATIVE_INT64; }

}  // namespace packtune::actors
