// FenceRule: when an agent that has lost the rendezvous stops its own
// workers (self-fencing), decided from when it last heard the daemon and how
// its latest attempt to reach it failed; a pure function, so every case is a
// row of a table test (tests/unit/rdzv_client_fence_rule_test.cc).
//
// The rules, in order:
//   1. heard within fence_timeout                      -> wait until
//      last_contact + fence_timeout;
//   2. silent that long, and the latest attempt was *refused* (the daemon's
//      host answers but its port is closed, or the daemon closed the
//      connection itself): the daemon is down for every agent alike, so no
//      other generation can form; keep the workers and look again one
//      keep_alive_interval later (a refusal can turn into silence);
//   3. silent that long otherwise: an open connection gone quiet (a stopped
//      daemon, a link that drops packets), a connect timeout, an unreachable
//      host, a failed name lookup, traffic cut: this agent may be the one cut
//      off while the others go on, so it fences now, before the daemon's
//      heartbeat_timeout (longer than fence_timeout) gives its ranks away.
//
// A replicated rendezvous (DecideReplicatedFence) has several daemons, and
// one refusing says nothing of the others; what buys time is an answer that
// shows no new leader has taken over yet. After rule 1:
//   R1. silent failover_timeout since the last leader -> fence: no leader took
//       this agent back in time;
//   R2. such an answer within fence_timeout (a *current* standby answer naming
//       no leader or the leader that served this agent, or that leader
//       closing the connection; not a refused connect, nor a standby naming a
//       newer leader, which this agent must reach) -> wait until that answer
//       is fence_timeout old or the failover bound, whichever comes first;
//   R3. no such answer for fence_timeout -> fence.
// A new leader holds its rebuild until every agent kept by these rules has
// fenced (rendezvous/state/takeover_hold.h).
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "common/clock.h"
#include "rendezvous/protocol/messages.h"
#include "rendezvous/state/settings.h"

namespace muster::rdzv {

// How the latest attempt to reach the daemon since the last message failed.
enum class ContactFailure {
  kNone,     // none failed: the connection is open (or being opened)
  kRefused,  // connection refused, or the daemon closed the connection itself
  kSilent,   // no answer: a connect timeout, unreachable, no such host, traffic cut
};

// A failed connect or a lost connection: `refused` is ECONNREFUSED on
// connect, or a close the daemon announced.
inline ContactFailure FailureOf(bool refused) {
  return refused ? ContactFailure::kRefused : ContactFailure::kSilent;
}

struct FenceDecision {
  enum class Kind { kWait, kFence };
  Kind kind = Kind::kWait;
  Time next_check;                      // kWait: decide again then
  std::chrono::milliseconds silent{0};  // now - last_contact
  std::string why;                      // kFence: for logs and the agent
};

FenceDecision DecideFence(Time last_contact, ContactFailure latest, Time now,
                          const Settings& settings);

// R2's standby answer: a not_leader or no_leader that shows no leader has
// taken over since the one whose Welcome this agent adopted last (epoch
// `served_epoch`): its view is current and names no leader, or that leader
// (or an older one).
bool StandbyAnswerPredatesTakeover(const Error& answer, uint64_t served_epoch);

// The replicated rule: `last_answer` is when a replica last answered without
// serving this agent, in a way R2 counts (nullopt: none has since
// last_contact).
FenceDecision DecideReplicatedFence(Time last_contact, std::optional<Time> last_answer, Time now,
                                    const Settings& settings);

// How long one attempt at a replica may take while the fence clock runs
// (PROTOCOL.md, "Agents and failover"): `usual` (the attempt deadline), but
// no more than an even share of the time left before the fence decides
// (`fence_check`, nullopt: no fence clock runs) among the `left_in_sweep`
// endpoints the walk has yet to try, the current one included, so that a
// slow endpoint cannot use up the time a healthy standby behind it needs to
// answer. Never less than kMinAttempt: an attempt must have a chance.
inline constexpr std::chrono::milliseconds kMinAttempt{20};
std::chrono::milliseconds AttemptBound(std::chrono::milliseconds usual,
                                       std::optional<Time> fence_check, Time now,
                                       size_t left_in_sweep);

}  // namespace muster::rdzv
