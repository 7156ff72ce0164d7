// Fuzzes the etcd JSON gateway's decoders (rendezvous/replica/etcd_json.h):
// the bodies a replicated musterd reads from etcd, or from whatever answers
// at an --etcd endpoint.
//
// Input: byte 0 picks the decoder (ParseLeaseGrant, ParseLeaseKeepAlive,
// ParseCampaign, ParseRange, ParseRangePrefix, ParsePut, ParseGuardedPut,
// EtcdError, Base64Decode); the rest is the body.
//
// Invariants beyond "no crash, no sanitizer report":
//   - a refusal is IoError with a one-line message;
//   - Base64Decode of Base64Encode(x) is x, and what Base64Decode accepts
//     encodes back to the same text once padding is normalised (checked as:
//     decoding the re-encoding gives the same bytes);
//   - a lease granted or a campaign won carries no negative number.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "rendezvous/replica/etcd_json.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

using muster::fuzz::Printable;
namespace replica = muster::rdzv::replica;

void CheckRefusal(const muster::Status& status) {
  FUZZ_CHECK(status.IsIoError(), "not IoError: " + status.message());
  FUZZ_CHECK(status.message().find('\n') == std::string::npos,
             "a refusal of more than one line: " + Printable(status.message()));
}

template <typename T>
void Check(const muster::Result<T>& result) {
  if (!result.ok()) CheckRefusal(result.status());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  switch (data[0] % 9) {
    case 0: {
      const auto lease = replica::ParseLeaseGrant(body);
      Check(lease);
      if (lease.ok()) FUZZ_CHECK(lease->ttl_seconds >= 0, "a negative TTL");
      break;
    }
    case 1:
      Check(replica::ParseLeaseKeepAlive(body));
      break;
    case 2:
      Check(replica::ParseCampaign(body));
      break;
    case 3:
      Check(replica::ParseRange(body));
      break;
    case 4:
      Check(replica::ParseRangePrefix(body));
      break;
    case 5: {
      const muster::Status put = replica::ParsePut(body);
      if (!put.ok()) CheckRefusal(put);
      break;
    }
    case 6:
      Check(replica::ParseGuardedPut(body));
      break;
    case 7: {
      const auto error = replica::EtcdError(body);
      if (error) {
        FUZZ_CHECK(error->find('\n') == std::string::npos,
                   "an etcd error of more than one line: " + Printable(*error));
      }
      break;
    }
    default: {
      const std::string encoded = replica::Base64Encode(body);
      const auto decoded = replica::Base64Decode(encoded);
      FUZZ_CHECK(decoded && *decoded == body, "Base64 does not round-trip " + Printable(body));
      if (const auto bytes = replica::Base64Decode(body)) {
        const auto again = replica::Base64Decode(replica::Base64Encode(*bytes));
        FUZZ_CHECK(again && *again == *bytes, "decoded bytes do not round-trip");
      }
      break;
    }
  }
  return 0;
}
