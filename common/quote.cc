#include "common/quote.h"

#include <cstdio>

namespace muster {

std::string Quote(std::string_view value) {
  // A runaway value (a pasted file) must not turn an error into a page.
  constexpr std::size_t kMaxShown = 200;
  std::string out = "'";
  for (std::size_t i = 0; i < value.size() && i < kMaxShown; ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c >= 0x7f) {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  if (value.size() > kMaxShown) out += "...";
  out += "'";
  return out;
}

}  // namespace muster
