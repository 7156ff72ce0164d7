// Refusal: how the rendezvous logic says no to a request. The peer gets an
// Error with `code` and `message`; a fatal one closes its connection after
// it (PROTOCOL.md: the receiver of a fatal Error must not send again).
#pragma once

#include <string>

#include "rendezvous/protocol/error_code.h"
#include "rendezvous/state/events.h"

namespace muster::rdzv {

enum class Refused {
  kMayRetry,  // not fatal: the peer may go on (join again, wait, ...)
  kFatal,     // Error.fatal, and the connection closes after it
};

// The actions that refuse a request that came on `conn`: a SendAction with
// the Error, then, when kFatal, a CloseAction.
Actions Refusal(ConnId conn, ErrorCode code, std::string message, Refused how);

}  // namespace muster::rdzv
