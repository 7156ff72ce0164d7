// What the fuzz targets share: FUZZ_CHECK for their invariants and a small
// deterministic chunker that splits one input the way a socket might.
//
// FUZZ_CHECK(condition, message) is on in every build type (assert() is not:
// RelWithDebInfo defines NDEBUG). A failure prints the condition, the place
// and `message` (any expression convertible to std::string, evaluated only on
// failure) and aborts, so libFuzzer keeps the input as a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#define FUZZ_CHECK(condition, message)                                            \
  do {                                                                            \
    if (!(condition)) {                                                           \
      ::muster::fuzz::Fail(#condition, __FILE__, __LINE__, std::string(message)); \
    }                                                                             \
  } while (0)

namespace muster::fuzz {

[[noreturn]] inline void Fail(const char* condition, const char* file, int line,
                              const std::string& message) {
  std::fprintf(stderr, "%s:%d: invariant broken: %s\n  %s\n", file, line, condition,
               message.c_str());
  std::abort();
}

// `bytes` printable: non-printable bytes as \xNN, at most 200 bytes shown.
inline std::string Printable(std::string_view bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < 200; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    }
  }
  if (bytes.size() > 200) out += "...";
  return out;
}

// Splits a stream into chunks whose sizes follow from `seed` alone: 0 gives
// the whole stream at once, anything else chunks of 1..64 bytes, sometimes
// larger, so one input is decoded both whole and as a socket delivers it.
class Chunker {
 public:
  explicit Chunker(uint8_t seed) : whole_(seed == 0), state_(seed) {}

  // The size of the next chunk, given the bytes left (>= 1).
  size_t Next(size_t left) {
    if (whole_) return left;
    state_ = state_ * 6364136223846793005ull + 1442695040888963407ull;
    const uint64_t r = state_ >> 33;
    const size_t size = (r & 7) == 0 ? 1 + (r >> 3) % 4096 : 1 + (r >> 3) % 64;
    return size < left ? size : left;
  }

 private:
  bool whole_;
  uint64_t state_;
};

}  // namespace muster::fuzz
