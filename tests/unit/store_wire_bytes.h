// Test helpers: build TCPStore wire bytes by hand (little-endian integers,
// uint64-length-prefixed strings), so tests read like the protocol tables.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace muster::store::testing {

template <typename T>
std::string Le(T v) {
  std::string out(sizeof(T), '\0');
  std::memcpy(out.data(), &v, sizeof(T));
  return out;
}
inline std::string U8(uint8_t v) { return std::string(1, static_cast<char>(v)); }
inline std::string U32(uint32_t v) { return Le<uint32_t>(v); }
inline std::string U64(uint64_t v) { return Le<uint64_t>(v); }
inline std::string I64(int64_t v) { return Le<int64_t>(v); }
inline std::string Str(const std::string& s) { return U64(s.size()) + s; }

// A byte string from hex digits, spaces ignored: Hex("03 0500000000000000").
inline std::string Hex(const std::string& hex) {
  std::string out;
  std::string digits;
  for (char c : hex) {
    if (c != ' ') digits.push_back(c);
  }
  for (size_t i = 0; i + 1 < digits.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(digits.substr(i, 2), nullptr, 16)));
  }
  return out;
}

// The opening a modern (torch >= 2) client sends: VALIDATE + magic.
inline std::string ModernValidate() { return U8(0) + U32(0x3C85F7CE); }

}  // namespace muster::store::testing
