// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of
// iSCSI, ext4 and LevelDB. Software only (slicing-by-8), so every platform
// computes the same value.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>

namespace muster::runtime {

// The CRC-32C of `crc`'s input followed by data[0, size). Start with
// Crc32cExtend(0, ...); Crc32cExtend(0, "123456789", 9) == 0xE3069283.
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t size);

}  // namespace muster::runtime
