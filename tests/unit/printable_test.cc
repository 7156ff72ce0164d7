// How a terminal or a log line shows an untrusted string
// (common/printable.h): controls escaped, valid UTF-8 kept.
#include "common/printable.h"

#include <catch2/catch.hpp>

namespace muster {
namespace {

TEST_CASE("control characters of every kind are escaped, printable text is kept", "[printable]") {
  CHECK(EscapeControlCharacters("node-1 host=a.b:29400") == "node-1 host=a.b:29400");
  // C0: a newline would forge a log line, ESC starts a terminal sequence.
  CHECK(EscapeControlCharacters("a\nevent=forged") == "a\\nevent=forged");
  CHECK(EscapeControlCharacters("a\r\tb") == "a\\r\\tb");
  CHECK(EscapeControlCharacters("\x1b]0;title\x07") == "\\x1b]0;title\\x07");
  CHECK(EscapeControlCharacters("\x1b[2J") == "\\x1b[2J");
  CHECK(EscapeControlCharacters(std::string_view("a\0b", 3)) == "a\\x00b");
  CHECK(EscapeControlCharacters("\x7f") == "\\x7f");
  // C1 in UTF-8 (U+009B is CSI, U+009D OSC) and as lone bytes.
  CHECK(EscapeControlCharacters("\xc2\x9b"
                                "2J") == "\\u009b2J");
  CHECK(EscapeControlCharacters("\xc2\x9d") == "\\u009d");
  CHECK(EscapeControlCharacters("\x9b"
                                "2J") == "\\x9b2J");
  CHECK(EscapeControlCharacters("\xc2") == "\\xc2");
  // Valid UTF-8 stays readable, U+00A0 and up included.
  CHECK(EscapeControlCharacters("n\xc5\x93ud-\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82 \xc2\xa0") ==
        "n\xc5\x93ud-\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82 \xc2\xa0");
  // Overlong and surrogate forms are not UTF-8.
  CHECK(EscapeControlCharacters("\xc0\x8a") == "\\xc0\\x8a");
  CHECK(EscapeControlCharacters("\xed\xa0\x80") == "\\xed\\xa0\\x80");
}

}  // namespace
}  // namespace muster
