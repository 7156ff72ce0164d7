// Fuzzes the run record decoder (rendezvous/replica/run_record_json.h): the
// value of each run's etcd key, which a replica taking the lead reads back.
//
// Input: the value, as is.
//
// Invariants beyond "no crash, no sanitizer report":
//   - a refusal is a one-line message;
//   - what decodes encodes to a value that decodes to an equal record.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "rendezvous/replica/run_record_json.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using muster::fuzz::Printable;
  namespace replica = muster::rdzv::replica;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto record = replica::DecodeRunRecord(text);
  if (!record.ok()) {
    FUZZ_CHECK(record.status().message().find('\n') == std::string::npos,
               "a refusal of more than one line: " + Printable(record.status().message()));
    return 0;
  }
  const std::string again = replica::EncodeRunRecord(*record);
  const auto reread = replica::DecodeRunRecord(again);
  FUZZ_CHECK(reread.ok(),
             "the encoding " + Printable(again) + " does not decode: " + reread.status().message());
  FUZZ_CHECK(replica::EncodeRunRecord(*reread) == again,
             "the record of " + Printable(text) + " does not round-trip");
  return 0;
}
