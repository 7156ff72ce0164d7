// RefusalLog: refused store connections are counted, and warned about
// without flooding the log.
#include <catch2/catch.hpp>

#include <chrono>
#include <string>

#include "store/refusal_log.h"

namespace muster::store {
namespace {

using std::chrono::seconds;

TEST_CASE("the first refusal of each address warns at once, others once per 10 s",
          "[store][refusal]") {
  RefusalLog log;
  const Time t0{};
  auto line = log.OnRefused("10.0.0.3", RefusalLog::AdmissionReason("members=2"), t0);
  REQUIRE(line);
  CHECK(*line ==
        "event=store_refused peer=10.0.0.3 refused_total=1 refused_since_last_warning=1 "
        "admitted=members=2 (the store admits loopback, this host and the admitted hosts only; "
        "see --store-allow)");
  CHECK_FALSE(log.OnRefused("10.0.0.3", RefusalLog::AdmissionReason("members=2"), t0 + seconds(1)));
  CHECK_FALSE(log.OnRefused("10.0.0.3", RefusalLog::AdmissionReason("members=2"), t0 + seconds(9)));
  // A new address is news even inside the quiet spell.
  CHECK(log.OnRefused("10.0.0.4", RefusalLog::AdmissionReason("members=2"), t0 + seconds(9)));
  CHECK_FALSE(
      log.OnRefused("10.0.0.3", RefusalLog::AdmissionReason("members=2"), t0 + seconds(18)));
  auto later =
      log.OnRefused("10.0.0.3", RefusalLog::AdmissionReason("members=2"), t0 + seconds(19));
  REQUIRE(later);
  CHECK(later->find("refused_total=6 refused_since_last_warning=2 ") != std::string::npos);
  CHECK(log.total() == 6);
  CHECK(log.RefusedFrom("10.0.0.3") == 5);
  CHECK(log.RefusedFrom("10.0.0.4") == 1);
  CHECK(log.RefusedFrom("10.0.0.5") == 0);
}

TEST_CASE("addresses past the remembered number are throttled and counted in total",
          "[store][refusal]") {
  RefusalLog log;
  const Time t0{};
  size_t warnings = 0;
  for (size_t i = 0; i < RefusalLog::kMaxAddresses + 10; ++i) {
    if (log.OnRefused("10.1." + std::to_string(i / 256) + "." + std::to_string(i % 256), "x", t0)) {
      ++warnings;
    }
  }
  CHECK(warnings == RefusalLog::kMaxAddresses);
  CHECK(log.total() == RefusalLog::kMaxAddresses + 10);
}

}  // namespace
}  // namespace muster::store
