// Fuzzes the TCPStore request decoder on a connection without handshake:
// torch 1.13 and torch 2.1 until the dialect rule (dialect_rule.h) tells them
// apart. The bytes decide everything, the opening is empty; a stream that
// happens to start with a modern VALIDATE is read as modern, as a server would.
// Input and invariants: tcpstore_fuzz_harness.h.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/tcpstore_fuzz_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return muster::fuzz::RunTcpStoreInput(data, size, "", muster::store::Dialect::kUnknown);
}
