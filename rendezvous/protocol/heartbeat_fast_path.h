// The hot message of a large job, decoded without a JSON parser. At 10,000
// nodes the daemon receives 40,000 Heartbeats a second; almost all are in the
// exact form Encode() writes:
//
//   {"generation":<digits>,"node_id":"<plain ASCII>","run_id":"<plain ASCII>"}
//
// DecodePlainHeartbeat() accepts only that form (plain = printable ASCII
// without '"' or '\\', at most kMaxShortStringBytes; generation without sign
// or leading zeros, within uint64) and returns nullopt for anything else,
// which then takes the general path with its full checks. So it never
// accepts what the general decoder would refuse.
//
// DecodePlainHeartbeatView() is the same without copying: its views point
// into `payload`, so the daemon can handle a heartbeat with no allocation.
#pragma once

#include <optional>
#include <string_view>

#include "rendezvous/protocol/messages.h"

namespace muster::rdzv {

std::optional<Heartbeat> DecodePlainHeartbeat(std::string_view payload);
std::optional<HeartbeatView> DecodePlainHeartbeatView(std::string_view payload);

}  // namespace muster::rdzv
