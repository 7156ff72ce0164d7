// Fuzzes the TCPStore request decoder on a torch 2.1 connection: the opening
// is CANCEL_WAIT (query byte 11), which only torch 2.1 has, so every later
// byte is read with the 2.1 numbering. Input and invariants:
// tcpstore_fuzz_harness.h.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/tcpstore_fuzz_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return muster::fuzz::RunTcpStoreInput(data, size, "\x0b", muster::store::Dialect::kTorch21);
}
