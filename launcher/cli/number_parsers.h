// Scalar value parsers shared by every flag: booleans, counts, ports,
// durations and fixed choices. Each takes the raw text of one value and
// returns the typed value, or an InvalidArgument status whose message starts
// with the quoted value ("'abc' must be a non-negative integer"); the caller
// prefixes where the value came from ("--max-restarts: ").
//
// Numbers are whole-string, locale-free, base 10: no spaces, no '+', no
// trailing characters.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "common/status.h"

namespace muster::cli {

// "1", "0", "true", "false" (any case).
Result<bool> ParseBool(std::string_view text);

// An int in [min, max]; the message names `what` ("a non-negative integer").
Result<int> ParseIntInRange(std::string_view text, int min, int max, std::string_view what);

// 0 <= n < 2^31.
Result<int> ParseNonNegativeInt(std::string_view text);

// A TCP port, 0..65535.
Result<int> ParsePort(std::string_view text);

// Seconds as a finite decimal number: > 0, or >= 0 when allow_zero.
Result<double> ParseSeconds(std::string_view text, bool allow_zero);

// One of `choices`, exactly (case-sensitive, like torchrun's argparse).
Result<std::string> ParseChoice(std::string_view text,
                                std::initializer_list<std::string_view> choices);

// Any text but the empty string.
Result<std::string> ParseNonEmpty(std::string_view text);

// A count >= 1 of up to 2^53: "4000000".
Result<uint64_t> ParseCount(std::string_view text);

// A size in bytes >= 1: decimal digits, optionally followed by K, M or G
// (also KiB, MiB, GiB; powers of 1024): "1G" is 1073741824. At most 2^53.
Result<uint64_t> ParseByteSize(std::string_view text);

}  // namespace muster::cli
