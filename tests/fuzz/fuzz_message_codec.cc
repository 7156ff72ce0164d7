// Fuzzes the rendezvous message codec (rendezvous/protocol/message_codec.h)
// and the Heartbeat fast path (heartbeat_fast_path.h): what one frame from a
// peer becomes.
//
// Input: byte 0 is the frame's type byte, the rest its JSON payload.
//
// Invariants beyond "no crash, no sanitizer report, no exception":
//   - a refusal is InvalidArgument with a one-line, non-empty message;
//   - an accepted message has the type byte it came with, and
//     decode -> Encode -> frame decode -> decode gives the same message
//     (operator==), whose encoding is the same bytes again;
//   - the fast path never accepts what Decode() refuses, and what it accepts
//     Decode() reads as the same Heartbeat (checked for every payload, not
//     only under the Heartbeat type byte);
//   - a Heartbeat whose ids are plain ASCII and that carries no compute
//     times is, once re-encoded, in the form the fast path takes (its
//     header: "almost all are in the exact form Encode() writes"); one with
//     compute times never takes the fast path.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "rendezvous/protocol/frame_codec.h"
#include "rendezvous/protocol/heartbeat_fast_path.h"
#include "rendezvous/protocol/message_codec.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace rdzv = muster::rdzv;
using muster::fuzz::Printable;

// The frame Encode() wrote, split back into type byte and payload.
rdzv::FrameResult Reframe(rdzv::FrameDecoder& decoder, const std::string& frame) {
  decoder.Feed(frame);
  rdzv::FrameResult r = decoder.Next();
  FUZZ_CHECK(r.state == rdzv::FrameResult::kFrame, "Encode() wrote no whole frame");
  FUZZ_CHECK(decoder.buffered_bytes() == 0, "Encode() wrote bytes after its frame");
  return r;
}

bool Plain(std::string_view text) {
  if (text.size() > rdzv::kMaxShortStringBytes) return false;
  for (char c : text) {
    if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') return false;
  }
  return true;
}

void CheckFastPath(std::string_view payload) {
  const auto view = rdzv::DecodePlainHeartbeatView(payload);
  if (!view) return;
  const auto full = rdzv::Decode(static_cast<uint8_t>(rdzv::MessageType::kHeartbeat), payload);
  FUZZ_CHECK(full.ok(), "the fast path took a Heartbeat Decode() refuses: " +
                            full.status().message() + " payload " + Printable(payload));
  const auto* hb = std::get_if<rdzv::Heartbeat>(&*full);
  FUZZ_CHECK(hb != nullptr && hb->run_id == view->run_id && hb->node_id == view->node_id &&
                 hb->generation == view->generation && hb->step == view->step &&
                 hb->compute_us.empty() && view->compute_us.empty(),
             "the fast path and Decode() read different Heartbeats: " + Printable(payload));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return -1;
  const uint8_t type = data[0];
  const std::string_view payload(reinterpret_cast<const char*>(data) + 1, size - 1);

  CheckFastPath(payload);

  const auto decoded = rdzv::Decode(type, payload);
  if (!decoded.ok()) {
    const std::string& message = decoded.status().message();
    FUZZ_CHECK(decoded.status().IsInvalidArgument(),
               "refused, but not InvalidArgument: " + message);
    FUZZ_CHECK(!message.empty(), "refused without a message");
    FUZZ_CHECK(message.find('\n') == std::string::npos && message.find('\r') == std::string::npos,
               "the refusal is not one line: " + Printable(message));
    return 0;
  }
  const rdzv::Message& message = *decoded;
  FUZZ_CHECK(static_cast<uint8_t>(rdzv::TypeOf(message)) == type,
             "type byte " + std::to_string(type) + " decoded as " +
                 std::string(rdzv::MessageName(message)));

  const std::string frame = rdzv::Encode(message);
  rdzv::FrameDecoder decoder(rdzv::kMaxStatusReplyFrameBytes);
  const rdzv::FrameResult reframed = Reframe(decoder, frame);
  FUZZ_CHECK(reframed.type == type, "Encode() wrote another type byte");
  const auto again = rdzv::Decode(reframed.type, reframed.payload);
  FUZZ_CHECK(again.ok(), "Decode() refuses what Encode() wrote: " + again.status().message() +
                             " payload " + Printable(reframed.payload));
  FUZZ_CHECK(*again == message, "decode -> encode -> decode changed the message; payload " +
                                    Printable(payload) + " re-encoded " +
                                    Printable(reframed.payload));
  FUZZ_CHECK(rdzv::Encode(*again) == frame, "encoding is not stable");

  if (const auto* hb = std::get_if<rdzv::Heartbeat>(&message);
      hb != nullptr && Plain(hb->run_id) && Plain(hb->node_id) && hb->compute_us.empty()) {
    const auto view = rdzv::DecodePlainHeartbeatView(reframed.payload);
    FUZZ_CHECK(view.has_value(),
               "the fast path misses an encoded Heartbeat: " + Printable(reframed.payload));
  }
  CheckFastPath(reframed.payload);
  return 0;
}
