#include "worker_runtime/checkpoint/crc32c.h"

#include <array>

namespace muster::runtime {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;

// tables[k][b]: the CRC of byte b followed by k zero bytes. Eight tables let
// the loop fold eight input bytes per step instead of one.
using SliceTables = std::array<std::array<uint32_t, 256>, 8>;

constexpr SliceTables MakeTables() {
  SliceTables tables{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? kPolynomial : 0u);
    tables[0][byte] = crc;
  }
  for (uint32_t byte = 0; byte < 256; ++byte) {
    for (size_t k = 1; k < 8; ++k) {
      const uint32_t previous = tables[k - 1][byte];
      tables[k][byte] = (previous >> 8) ^ tables[0][previous & 0xFFu];
    }
  }
  return tables;
}

constexpr SliceTables kTables = MakeTables();

}  // namespace

uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint32_t state = ~crc;
  // Bytes are combined explicitly (not loaded as words), so the result does
  // not depend on the host's byte order.
  while (size >= 8) {
    const uint32_t low = state ^ (uint32_t{bytes[0]} | uint32_t{bytes[1]} << 8 |
                                  uint32_t{bytes[2]} << 16 | uint32_t{bytes[3]} << 24);
    state = kTables[7][low & 0xFFu] ^ kTables[6][(low >> 8) & 0xFFu] ^
            kTables[5][(low >> 16) & 0xFFu] ^ kTables[4][low >> 24] ^ kTables[3][bytes[4]] ^
            kTables[2][bytes[5]] ^ kTables[1][bytes[6]] ^ kTables[0][bytes[7]];
    bytes += 8;
    size -= 8;
  }
  while (size-- > 0) state = (state >> 8) ^ kTables[0][(state ^ *bytes++) & 0xFFu];
  return ~state;
}

}  // namespace muster::runtime
