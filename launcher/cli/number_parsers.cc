#include "launcher/cli/number_parsers.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "common/decimal.h"
#include "common/quote.h"

namespace muster::cli {
namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

}  // namespace

Result<bool> ParseBool(std::string_view text) {
  const std::string lower = Lower(text);
  if (lower == "1" || lower == "true") return true;
  if (lower == "0" || lower == "false") return false;
  return Status::InvalidArgument(Quote(text) + " must be 1, 0, true or false");
}

Result<int> ParseIntInRange(std::string_view text, int min, int max, std::string_view what) {
  // from_chars, not stoi: no locale, no exceptions, no silent "12abc" -> 12.
  long long value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < min || value > max) {
    return Status::InvalidArgument(Quote(text) + " must be " + std::string(what));
  }
  return static_cast<int>(value);
}

namespace {
constexpr uint64_t kMaxCount = uint64_t{1} << 53;
}  // namespace

Result<uint64_t> ParseCount(std::string_view text) {
  const auto value = ParseDecimal(text, kMaxCount);
  if (!value || *value == 0) {
    return Status::InvalidArgument(Quote(text) + " must be a whole number from 1 to 2^53");
  }
  return *value;
}

Result<uint64_t> ParseByteSize(std::string_view text) {
  std::string_view digits = text;
  uint64_t unit = 1;
  struct Suffix {
    std::string_view text;
    uint64_t unit;
  };
  for (const Suffix& suffix :
       {Suffix{"KiB", 1ull << 10}, Suffix{"MiB", 1ull << 20}, Suffix{"GiB", 1ull << 30},
        Suffix{"K", 1ull << 10}, Suffix{"M", 1ull << 20}, Suffix{"G", 1ull << 30}}) {
    if (digits.ends_with(suffix.text)) {
      digits.remove_suffix(suffix.text.size());
      unit = suffix.unit;
      break;
    }
  }
  const auto value = ParseDecimal(digits, kMaxCount / unit);
  if (!value || *value == 0) {
    return Status::InvalidArgument(Quote(text) +
                                   " must be a size in bytes from 1 to 2^53, optionally with K, "
                                   "M or G (powers of 1024), e.g. 512M");
  }
  return *value * unit;
}

Result<int> ParseNonNegativeInt(std::string_view text) {
  return ParseIntInRange(text, 0, std::numeric_limits<int>::max(), "a non-negative integer");
}

Result<int> ParsePort(std::string_view text) {
  return ParseIntInRange(text, 0, 65535, "a port number from 0 to 65535");
}

Result<double> ParseSeconds(std::string_view text, bool allow_zero) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  const bool ok = !text.empty() && ec == std::errc() && ptr == end && std::isfinite(value) &&
                  (allow_zero ? value >= 0 : value > 0);
  if (!ok) {
    return Status::InvalidArgument(Quote(text) + " must be a number of seconds " +
                                   (allow_zero ? ">= 0" : "greater than 0"));
  }
  return value;
}

Result<std::string> ParseChoice(std::string_view text,
                                std::initializer_list<std::string_view> choices) {
  std::string list;
  std::size_t i = 0;
  for (std::string_view choice : choices) {
    if (text == choice) return std::string(text);
    list += (i == 0 ? "" : (i + 1 == choices.size() ? " or " : ", "));
    list += '\'';
    list += choice;
    list += '\'';
    ++i;
  }
  return Status::InvalidArgument(Quote(text) + " must be " + list);
}

Result<std::string> ParseNonEmpty(std::string_view text) {
  if (text.empty()) return Status::InvalidArgument("'' must not be empty");
  return std::string(text);
}

}  // namespace muster::cli
