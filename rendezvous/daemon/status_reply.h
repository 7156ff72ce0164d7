// StatusReplyFrame: the frame that answers a StatusRequest. A StatusReply
// holding StatusJson(snapshot) when its frame fits the bound a status client
// accepts (kMaxStatusReplyFrameBytes, the one frame allowed over 1 MiB);
// otherwise a non-fatal Error{kBadRequest} naming the size and asking for one
// run, since a frame over the bound would only break the client's connection.
// Pure. Never throws except std::bad_alloc.
#pragma once

#include <string>

#include "rendezvous/state/status_snapshot.h"

namespace muster::rdzv {

// A whole frame (length prefix, type byte, payload), as Encode() writes it.
std::string StatusReplyFrame(const StatusSnapshot& snapshot);

}  // namespace muster::rdzv
