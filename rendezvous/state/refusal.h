// Refusal: how the rendezvous logic says no to a request. The peer gets an
// Error with `code` and `message`; when `fatal`, its connection is closed
// after it (PROTOCOL.md: the receiver of a fatal Error must not send again).
#pragma once

#include <string>

#include "rendezvous/protocol/error_code.h"
#include "rendezvous/state/events.h"

namespace muster::rdzv {

// The actions that refuse a request that came on `conn`: a SendAction with
// the Error, then, when `fatal`, a CloseAction.
Actions Refusal(ConnId conn, ErrorCode code, std::string message, bool fatal);

}  // namespace muster::rdzv
