// Fuzzes the TCPStore request decoder on a torch >= 2.2 connection: the
// opening is the VALIDATE handshake (0x00, then the magic 0x3C85F7CE
// little-endian). Input and invariants: tcpstore_fuzz_harness.h.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tests/fuzz/tcpstore_fuzz_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace std::string_view_literals;
  return muster::fuzz::RunTcpStoreInput(data, size, "\x00\xce\xf7\x85\x3c"sv,
                                        muster::store::Dialect::kModern);
}
