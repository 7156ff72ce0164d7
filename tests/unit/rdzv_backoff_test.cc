#include <catch2/catch.hpp>

#include "common/backoff.h"

using muster::NextBackoff;
using std::chrono::milliseconds;

TEST_CASE("reconnect backoff doubles from the base and stops at the cap", "[backoff]") {
  CHECK(NextBackoff(0, milliseconds(50), milliseconds(500), 0.999999) == milliseconds(49));
  CHECK(NextBackoff(1, milliseconds(50), milliseconds(500), 0.999999) == milliseconds(99));
  CHECK(NextBackoff(3, milliseconds(50), milliseconds(500), 0.999999) == milliseconds(399));
  CHECK(NextBackoff(4, milliseconds(50), milliseconds(500), 0.999999) == milliseconds(499));
  CHECK(NextBackoff(30, milliseconds(50), milliseconds(500), 0.999999) == milliseconds(499));
}

TEST_CASE("reconnect backoff is jittered within half to all of the step", "[backoff]") {
  CHECK(NextBackoff(2, milliseconds(50), milliseconds(500), 0.0) == milliseconds(100));
  CHECK(NextBackoff(2, milliseconds(50), milliseconds(500), 0.5) == milliseconds(150));
  for (double r = 0; r < 1.0; r += 0.01) {
    const auto d = NextBackoff(5, milliseconds(50), milliseconds(500), r);
    CHECK(d >= milliseconds(250));
    CHECK(d <= milliseconds(500));
  }
}
