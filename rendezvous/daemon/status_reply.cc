#include "rendezvous/daemon/status_reply.h"

#include "rendezvous/daemon/status_json.h"
#include "rendezvous/protocol/frame_codec.h"
#include "rendezvous/protocol/message_codec.h"

namespace muster::rdzv {

std::string StatusReplyFrame(const StatusSnapshot& snapshot) {
  // Encoded first to learn its size: the bound is on the frame, not the document.
  std::string frame = Encode(StatusReply{StatusJson(snapshot)});
  const size_t bytes = frame.size() - kFrameLengthBytes;
  if (bytes <= kMaxStatusReplyFrameBytes) return frame;
  return Encode(Error{ErrorCode::kBadRequest,
                      "the status document is " + std::to_string(bytes) + " bytes, over the " +
                          std::to_string(kMaxStatusReplyFrameBytes) +
                          "-byte bound of a StatusReply; ask for one run (--run-id)",
                      false});
}

}  // namespace muster::rdzv
