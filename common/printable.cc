#include "common/printable.h"

#include <cstdio>

namespace muster {
namespace {

void AppendHex(std::string& out, unsigned char byte) {
  char text[5];
  std::snprintf(text, sizeof text, "\\x%02x", byte);
  out += text;
}

// The length of the valid UTF-8 sequence that starts at text[i], or 0.
// Overlong forms, surrogates and code points past U+10FFFF are invalid.
size_t Utf8Length(std::string_view text, size_t i) {
  const auto lead = static_cast<unsigned char>(text[i]);
  size_t length = 0;
  unsigned char low = 0x80, high = 0xbf;  // the bounds of the second byte
  if (lead >= 0xc2 && lead <= 0xdf) {
    length = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    length = 3;
    if (lead == 0xe0) low = 0xa0;
    if (lead == 0xed) high = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    length = 4;
    if (lead == 0xf0) low = 0x90;
    if (lead == 0xf4) high = 0x8f;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k) {
    const auto byte = static_cast<unsigned char>(text[i + k]);
    if (k == 1 ? (byte < low || byte > high) : (byte < 0x80 || byte > 0xbf)) return 0;
  }
  return length;
}

}  // namespace

std::string EscapeControlCharacters(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte < 0x7f) {
      out += static_cast<char>(byte);
      ++i;
    } else if (byte == '\n') {
      out += "\\n";
      ++i;
    } else if (byte == '\r') {
      out += "\\r";
      ++i;
    } else if (byte == '\t') {
      out += "\\t";
      ++i;
    } else if (byte < 0x80) {  // the rest of C0, and DEL
      AppendHex(out, byte);
      ++i;
    } else if (const size_t length = Utf8Length(text, i); length == 0) {
      AppendHex(out, byte);
      ++i;
    } else if (byte == 0xc2 && static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      // U+0080..U+009F: C1 controls, as UTF-8.
      char escaped[7];
      std::snprintf(escaped, sizeof escaped, "\\u%04x",
                    static_cast<unsigned>(static_cast<unsigned char>(text[i + 1])));
      out += escaped;
      i += 2;
    } else {
      out.append(text.substr(i, length));
      i += length;
    }
  }
  return out;
}

}  // namespace muster
