// HelloGate: how the daemon answers a connection's first message. Pure: the
// shell hands it the message, what this replica knows of its role
// (replica_status.h) and the time, sends the reply, and keeps the
// connection only when it is welcomed.
//
//   first message                          reply                      verdict
//   not a Hello                            Error bad_request, fatal   kRefused
//   another protocol version               Error bad_version, fatal   kRefused
//   a token that is not the daemon's       Error bad_token, fatal     kRefused
//   any, at a replica that does not serve  StandbyAnswer()            kRedirected
//   otherwise                              Welcome                    kWelcome
//
// The Welcome carries the daemon's timing (TimingOf): the agent heartbeats
// and fences by it, so it stops its workers before this daemon gives its
// place away, whatever the agent's own --rdzv-conf says.
//
// A replica that does not serve (ReplicaStatus::Serves) answers with the
// leader it knows (not_leader, with its HOST:PORT and epoch) or with
// no_leader, never naming itself: a key of its own that outlived its lead,
// or the moment between its deadline and the next tick. Either answer is
// `current` while its view of the leader was read from etcd within
// kStandbyViewCurrentFor (takeover_hold.h): an agent counts only a current
// answer towards keeping its workers (fence_rule.h).
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "common/clock.h"
#include "rendezvous/protocol/messages.h"
#include "rendezvous/state/replica_status.h"
#include "rendezvous/state/settings.h"

namespace muster::rdzv {

struct HelloAnswer {
  enum class Verdict {
    kWelcome,     // the connection is greeted: the agent's requests are served
    kRefused,     // a bad Hello: the connection closes after the Error
    kRedirected,  // a replica that does not serve: it closes after the Error
  };
  Verdict verdict = Verdict::kRefused;
  Message reply;  // Welcome, or Error
};

// What the daemon whose token is `token` (empty: none required), whose id
// is `daemon_id` and whose settings are `settings` answers to `first` at `now`.
HelloAnswer AnswerHello(const Message& first, std::string_view token, const std::string& daemon_id,
                        const Settings& settings, const ReplicaStatus& replica, Time now);

// The part of `settings` a Welcome carries.
DaemonTiming TimingOf(const Settings& settings);

// What a replica that does not serve answers to a Hello at `now` (not fatal:
// the agent tries the leader it names, or another replica).
Error StandbyAnswer(const ReplicaStatus& replica, Time now);

// The epoch stamped on Welcome and assignments: the replica's while it
// leads, 0 when it does not (and when not replicated).
inline uint64_t ServingEpoch(const ReplicaStatus& replica) {
  return replica.leading ? replica.epoch : 0;
}

}  // namespace muster::rdzv
