// Reading numbers out of environment variables, with errors that name the
// variable and quote its value ("RANK='x' is not a non-negative integer").
//
// Numbers are strict (muster::ParseDecimal, common/decimal.h): decimal
// digits only, no sign, no spaces, no trailing text, and they must fit the
// result type.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace muster::runtime {

// `value` as an int >= 0. Error: "NAME='value' is not a non-negative integer".
Result<int> NonNegativeInt(const std::string& name, const std::string& value);
// `value` as an int >= 1. Error: "NAME='value' is not a positive integer".
Result<int> PositiveInt(const std::string& name, const std::string& value);
// `value` as an int64 >= 0. Error as NonNegativeInt.
Result<int64_t> NonNegativeInt64(const std::string& name, const std::string& value);
// `value` as a TCP port 1..65535. Error: "NAME='value' is not a port".
Result<int> Port(const std::string& name, const std::string& value);

}  // namespace muster::runtime
