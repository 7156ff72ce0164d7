#include "worker_runtime/bootstrap/env_value.h"

#include <limits>

#include "common/decimal.h"

namespace muster::runtime {

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
