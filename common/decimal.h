// ParseDecimal: the one strict decimal-number check, shared by everything
// that reads a count, an id or a step out of text (environment variables,
// file names). Strict means decimal digits only: no sign, no spaces, no
// "0x", no trailing text ("4x" is not 4), and at least one digit.
//
// Thread-safety: a pure function.
#pragma once

#include <charconv>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <system_error>

namespace muster {

// The digits of `text` as a number, or nullopt when `text` is not a strict
// decimal number or its value exceeds `max` (overflow of 64 bits included).
// Leading zeros are accepted: "007" is 7.
inline std::optional<uint64_t> ParseDecimal(std::string_view text,
                                            uint64_t max = std::numeric_limits<uint64_t>::max()) {
  // from_chars alone would accept a prefix ("4x") and a leading '-' is not
  // ours to take: every byte must be a digit.
  if (text.empty()) return std::nullopt;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value > max) {
    return std::nullopt;
  }
  return value;
}

}  // namespace muster
