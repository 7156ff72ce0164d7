// The hot message of a large job, decoded without a JSON parser or a copy. At
// 10,000 nodes and the default keep_alive_interval (0.5 s) the daemon receives
// 20,000 Heartbeats a second; almost all are in the exact form Encode() writes:
//
//   {"generation":<digits>,"node_id":"<plain ASCII>","run_id":"<plain ASCII>"}
//   {"generation":<digits>,"node_id":"<plain ASCII>","run_id":"<plain ASCII>","step":<digits>}
//
// (the second once the node's workers report steps: Heartbeat::step).
// DecodePlainHeartbeatView() accepts only these forms (plain = printable
// ASCII without '"' or '\\', at most kMaxShortStringBytes; generation and
// step without sign or leading zeros, within uint64) and returns nullopt for
// anything else, which then takes the general path, Decode(), with its full
// checks. So it never accepts what Decode() would refuse, and what it accepts
// Decode() reads as the same Heartbeat.
//
// The views of the result point into `payload`: valid while it is. The daemon
// uses it through MessageChannel's on_frame hook, so a heartbeat costs no
// allocation.
//
// Thread-safety: a pure function.
#pragma once

#include <optional>
#include <string_view>

#include "rendezvous/protocol/messages.h"

namespace muster::rdzv {

std::optional<HeartbeatView> DecodePlainHeartbeatView(std::string_view payload);

}  // namespace muster::rdzv
