#include "worker_runtime/bootstrap/env_value.h"

#include <charconv>
#include <limits>

namespace muster::runtime {

std::optional<uint64_t> ParseDecimal(std::string_view text, uint64_t max) {
  // from_chars alone would accept a prefix ("4x"); every byte must be a digit.
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

namespace {

Status Invalid(const std::string& name, const std::string& value, const char* what) {
  return Status::InvalidArgument(name + "='" + value + "' is not " + what);
}

}  // namespace

Result<int> NonNegativeInt(const std::string& name, const std::string& value) {
  const auto n = ParseDecimal(value, std::numeric_limits<int>::max());
  if (!n) return Invalid(name, value, "a non-negative integer");
  return static_cast<int>(*n);
}

Result<int> PositiveInt(const std::string& name, const std::string& value) {
  const auto n = ParseDecimal(value, std::numeric_limits<int>::max());
  if (!n || *n == 0) return Invalid(name, value, "a positive integer");
  return static_cast<int>(*n);
}

Result<int64_t> NonNegativeInt64(const std::string& name, const std::string& value) {
  const auto n = ParseDecimal(value, std::numeric_limits<int64_t>::max());
  if (!n) return Invalid(name, value, "a non-negative integer");
  return static_cast<int64_t>(*n);
}

Result<int> Port(const std::string& name, const std::string& value) {
  const auto n = ParseDecimal(value, 65535);
  if (!n || *n == 0) return Invalid(name, value, "a port");
  return static_cast<int>(*n);
}

}  // namespace muster::runtime
