// CRC-32 reference and slicing-by-8 implementations, and the run-time choice of the fastest one
// (see crc32.h; the PCLMULQDQ path is in crc32_pclmul.cpp).
#include "wire/crc32.h"

#include "wire/byte_order.h"
#include "wire/crc32_tables.h"

namespace vroce::wire {

std::uint32_t crc32_update_bitwise(std::uint32_t state, const std::uint8_t* data,
                                   std::size_t len) noexcept {
  for (std::size_t i = 0; i < len; ++i) {
    state ^= data[i];
    for (int b = 0; b < 8; ++b) {
      state = (state & 1u) ? (state >> 1) ^ kCrc32PolyReflected : state >> 1;
    }
  }
  return state;
}

std::uint32_t crc32_update_slicing8(std::uint32_t state, const std::uint8_t* data,
                                    std::size_t len) noexcept {
  const auto& t = detail::kSlicingTables;
  while (len >= 8) {
    const std::uint32_t lo = load_le32(data) ^ state;
    const std::uint32_t hi = load_le32(data + 4);
    state = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
            t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
    data += 8;
    len -= 8;
  }
  while (len-- > 0) {
    state = t[0][(state ^ *data++) & 0xFF] ^ (state >> 8);
  }
  return state;
}

namespace {

using UpdateFn = std::uint32_t (*)(std::uint32_t, const std::uint8_t*, std::size_t) noexcept;

UpdateFn select_update() noexcept {
  return crc32_pclmul_supported() ? &crc32_update_pclmul : &crc32_update_slicing8;
}

const UpdateFn kUpdate = select_update();

}  // namespace

std::uint32_t crc32_update(std::uint32_t state, const void* data, std::size_t len) noexcept {
  // kUpdate is set during static initialisation; a caller running before that (another static
  // initialiser) still gets a correct answer from the portable path.
  const UpdateFn fn = kUpdate != nullptr ? kUpdate : &crc32_update_slicing8;
  return fn(state, static_cast<const std::uint8_t*>(data), len);
}

std::string_view crc32_implementation() noexcept {
  return crc32_pclmul_supported() ? "pclmul" : "slicing-by-8";
}

}  // namespace vroce::wire
