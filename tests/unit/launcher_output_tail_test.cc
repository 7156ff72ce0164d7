#include <catch2/catch.hpp>

#include "launcher/output/output_tail.h"

using namespace muster;

TEST_CASE("an output tail keeps the newest bytes across writes", "[tail]") {
  OutputTail tail(8);
  tail.Append("abc");
  tail.Append("defg");
  CHECK(tail.text() == "abcdefg");
  tail.Append("hij");
  CHECK(tail.text() == "cdefghij");
  tail.Append("0123456789");
  CHECK(tail.text() == "23456789");
}
