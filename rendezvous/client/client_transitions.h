// The states of ClientMachine (client_machine.h) and every change between
// them, as data. The machine checks each change it makes against
// kClientTransitions: one the table lacks is a bug, logged
// (event=rdzv_client_stray_transition) and kept for the tests
// (ClientMachine::stray_transition()). tests/unit/rdzv_client_machine_test.cc
// drives the machine through every row.
//
// A row changes the state; what happens within a state (heartbeats, retries,
// assignments delivered) is in client_machine.h.
#pragma once

#include <algorithm>
#include <iterator>
#include <string>

namespace muster::rdzv {

enum class ClientState {
  kConnecting,  // no leader serves this agent; an attempt is being connected, or
                // the next one waits for its turn (kRetry)
  kGreeting,    // an attempt's connection is open: Hello and Join went out, its
                // answer is awaited until kAttempt
  kServed,      // a leader's Welcome was adopted: every message is contact
  kProbing,     // served, but the leader was quiet past a missed ack (kQuiet):
                // attempts walk the other replicas beside it
  kFenced,      // the fence fired and no leader took this agent back yet;
                // attempts go on (as in kConnecting and kGreeting), at the
                // walk's backoff pace
  kStopped,     // Stop(), or refused for good: every event is ignored
};

// What moves the machine from one state to another.
enum class ClientTrigger {
  kConnected,        // the attempt's connection opened
  kAttemptEnded,     // the attempt ended unanswered: closed, timed out, or
                     // welcomed by a leader of an older epoch
  kStandbyAnswered,  // a standby answered the attempt (not_leader, no_leader)
  kWelcome,          // the attempt's Welcome was adopted
  kQuiet,            // the leader served was quiet past a missed ack (replicas)
  kLeaderHeard,      // the quiet leader was heard again
  kServedLost,       // the link served was closed, by the leader or the network
  kFence,            // fence_rule.h decided to fence
  kGiveUp,           // refused for good, or nothing to follow (see below)
  kStop,             // Stop()
};

struct ClientTransition {
  ClientState from = ClientState::kConnecting;
  ClientTrigger trigger = ClientTrigger::kConnected;
  ClientState to = ClientState::kConnecting;
  bool operator==(const ClientTransition&) const = default;
};

// The machine starts in kConnecting (Start() begins the first attempt).
// clang-format off
inline constexpr ClientTransition kClientTransitions[] = {
    // SendTo Hello, Join and the kept report; arm kAttempt.
    {ClientState::kConnecting, ClientTrigger::kConnected,       ClientState::kGreeting},
    // CloseLink; the walk moves on: arm kRetry.
    {ClientState::kGreeting,   ClientTrigger::kAttemptEnded,    ClientState::kConnecting},
    // CloseLink; the walk follows the leader it names, or moves on: arm kRetry.
    {ClientState::kGreeting,   ClientTrigger::kStandbyAnswered, ClientState::kConnecting},
    // The attempt is the link served (a quiet one it replaces: CloseLink);
    // adopt its timing; arm kFence, kQuiet (replicas).
    {ClientState::kGreeting,   ClientTrigger::kWelcome,         ClientState::kServed},
    {ClientState::kProbing,    ClientTrigger::kWelcome,         ClientState::kServed},
    {ClientState::kFenced,     ClientTrigger::kWelcome,         ClientState::kServed},
    // The link stays (the leader may be slow); the leader is suspect: arm kRetry.
    {ClientState::kServed,     ClientTrigger::kQuiet,           ClientState::kProbing},
    // The probe's attempt is closed.
    {ClientState::kProbing,    ClientTrigger::kLeaderHeard,     ClientState::kServed},
    // Arm kRetry, or let a probe's attempt under way carry on (kGreeting once
    // it connected). Fenced while served (a quiet link): kFenced.
    {ClientState::kServed,     ClientTrigger::kServedLost,      ClientState::kConnecting},
    {ClientState::kServed,     ClientTrigger::kServedLost,      ClientState::kFenced},
    {ClientState::kProbing,    ClientTrigger::kServedLost,      ClientState::kConnecting},
    {ClientState::kProbing,    ClientTrigger::kServedLost,      ClientState::kGreeting},
    {ClientState::kProbing,    ClientTrigger::kServedLost,      ClientState::kFenced},
    // FenceWorkers. A link still served when the fence fires (a quiet leader)
    // stays kServed or kProbing, fenced, until a Welcome: no row.
    {ClientState::kConnecting, ClientTrigger::kFence,           ClientState::kFenced},
    {ClientState::kGreeting,   ClientTrigger::kFence,           ClientState::kFenced},
    // Close everything, GiveUp: a bad token or version, a fatal error, TLS
    // refused, a Welcome whose timing breaks the fence rule, no Welcome
    // within the first-contact limit (kFirstContact), no endpoint at Start.
    {ClientState::kConnecting, ClientTrigger::kGiveUp,          ClientState::kStopped},
    {ClientState::kGreeting,   ClientTrigger::kGiveUp,          ClientState::kStopped},
    {ClientState::kServed,     ClientTrigger::kGiveUp,          ClientState::kStopped},
    {ClientState::kProbing,    ClientTrigger::kGiveUp,          ClientState::kStopped},
    {ClientState::kFenced,     ClientTrigger::kGiveUp,          ClientState::kStopped},
    // Close everything.
    {ClientState::kConnecting, ClientTrigger::kStop,            ClientState::kStopped},
    {ClientState::kGreeting,   ClientTrigger::kStop,            ClientState::kStopped},
    {ClientState::kServed,     ClientTrigger::kStop,            ClientState::kStopped},
    {ClientState::kProbing,    ClientTrigger::kStop,            ClientState::kStopped},
    {ClientState::kFenced,     ClientTrigger::kStop,            ClientState::kStopped},
};
// clang-format on

constexpr bool IsClientTransition(const ClientTransition& transition) {
  return std::find(std::begin(kClientTransitions), std::end(kClientTransitions), transition) !=
         std::end(kClientTransitions);
}

// "connecting", "greeting"...: as logs and test failures name them.
constexpr const char* ClientStateName(ClientState state) {
  switch (state) {
    case ClientState::kConnecting:
      return "connecting";
    case ClientState::kGreeting:
      return "greeting";
    case ClientState::kServed:
      return "served";
    case ClientState::kProbing:
      return "probing";
    case ClientState::kFenced:
      return "fenced";
    case ClientState::kStopped:
      return "stopped";
  }
  return "?";
}

constexpr const char* ClientTriggerName(ClientTrigger trigger) {
  switch (trigger) {
    case ClientTrigger::kConnected:
      return "connected";
    case ClientTrigger::kAttemptEnded:
      return "attempt_ended";
    case ClientTrigger::kStandbyAnswered:
      return "standby_answered";
    case ClientTrigger::kWelcome:
      return "welcome";
    case ClientTrigger::kQuiet:
      return "quiet";
    case ClientTrigger::kLeaderHeard:
      return "leader_heard";
    case ClientTrigger::kServedLost:
      return "served_lost";
    case ClientTrigger::kFence:
      return "fence";
    case ClientTrigger::kGiveUp:
      return "give_up";
    case ClientTrigger::kStop:
      return "stop";
  }
  return "?";
}

// "from=served trigger=quiet to=probing": as logs and test failures show one.
inline std::string ClientTransitionText(const ClientTransition& transition) {
  return std::string("from=") + ClientStateName(transition.from) +
         " trigger=" + ClientTriggerName(transition.trigger) +
         " to=" + ClientStateName(transition.to);
}

namespace client_transitions_detail {

constexpr bool RowsUnique() {
  for (auto a = std::begin(kClientTransitions); a != std::end(kClientTransitions); ++a) {
    if (std::find(a + 1, std::end(kClientTransitions), *a) != std::end(kClientTransitions)) {
      return false;
    }
  }
  return true;
}

constexpr bool StoppedIsFinal() {
  return std::none_of(std::begin(kClientTransitions), std::end(kClientTransitions),
                      [](const ClientTransition& t) { return t.from == ClientState::kStopped; });
}

}  // namespace client_transitions_detail

static_assert(client_transitions_detail::RowsUnique(), "a client transition is listed twice");
static_assert(client_transitions_detail::StoppedIsFinal(), "nothing leaves kStopped");

}  // namespace muster::rdzv
