// TimingAgreement: an agent heartbeats and fences by the timing of the
// daemon that welcomed it, not by its own --rdzv-conf. Pure: ClientMachine
// calls it with each Welcome's DaemonTiming (messages.h).
//
// Why: the daemon gives a silent node's place away after its
// heartbeat_timeout; the agent must stop its workers before that (its
// fence_timeout, shorter), or two generations train at once. Each side
// parses its own --rdzv-conf, so only the daemon's values make the rule hold
// whatever either side was started with: an agent started with
// heartbeat_timeout=10 (fence after 8 s) under a daemon that gives places
// away after 1.25 s fences after the daemon's 1 s instead.
//
// Adopted from the daemon: keep_alive_interval, heartbeat_timeout,
// fence_timeout, failover_timeout. The agent's other settings (connect and
// first-contact waits) are its own business and stay.
//
// Thread-safety: pure functions.
#pragma once

#include <string>

#include "common/status.h"
#include "rendezvous/protocol/messages.h"
#include "rendezvous/state/settings.h"

namespace muster::rdzv {

struct AdoptedTiming {
  Settings settings;  // `own`, with the daemon's timing
  // The values that differ, each with both sides, for one warning:
  // "heartbeat_timeout=1.25s(own=10s) fence_timeout=1s(own=8s)"; empty when
  // the agent was started with the daemon's timing.
  std::string differences;
};

// `own` with `daemon`'s timing. InvalidArgument naming the setting when the
// daemon's timing breaks the rules its own --rdzv-conf is held to (a value
// of 0, fence_timeout not shorter than heartbeat_timeout, ...): a daemon
// whose fence rule cannot hold is refused rather than followed, e.g.
// "the rendezvous's timing is unusable: fence_timeout=1.5s must be shorter
// than heartbeat_timeout=1.25s".
Result<AdoptedTiming> AdoptDaemonTiming(const Settings& own, const DaemonTiming& daemon);

}  // namespace muster::rdzv
