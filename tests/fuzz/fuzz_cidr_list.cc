// Fuzzes the store allowlist's parser (store/peer_admission.h): what
// --store-allow holds.
//
// Input: the list, as is.
//
// Invariants beyond "no crash, no sanitizer report":
//   - a refusal is InvalidArgument, one line, naming --store-allow;
//   - each block's prefix fits its family (0..32, 0..128) and the block
//     contains its own base address;
//   - the blocks written as text ("10.0.0.0/8,...") parse to the same blocks.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "store/peer_admission.h"
#include "tests/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using muster::fuzz::Printable;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto blocks = muster::store::ParseCidrList(text);
  if (!blocks.ok()) {
    const std::string& message = blocks.status().message();
    FUZZ_CHECK(blocks.status().IsInvalidArgument(), "not InvalidArgument: " + message);
    FUZZ_CHECK(message.starts_with("--store-allow: "),
               "not naming the flag: " + Printable(message));
    FUZZ_CHECK(message.find('\n') == std::string::npos, "a refusal of more than one line");
    return 0;
  }
  FUZZ_CHECK(!blocks->empty(), "an empty list parsed");
  std::string joined;
  for (const muster::store::Cidr& block : *blocks) {
    const int bits = block.network.is_v4() ? 32 : 128;
    FUZZ_CHECK(block.prefix_length >= 0 && block.prefix_length <= bits,
               "prefix " + std::to_string(block.prefix_length) + " of " + block.Text());
    FUZZ_CHECK(block.Contains(block.network), block.Text() + " does not contain its address");
    joined += (joined.empty() ? "" : ",") + block.Text();
  }
  const auto again = muster::store::ParseCidrList(joined);
  FUZZ_CHECK(again.ok() && *again == *blocks,
             "the blocks as text " + Printable(joined) + " parse to other blocks");
  return 0;
}
