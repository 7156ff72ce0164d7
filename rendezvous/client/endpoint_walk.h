// EndpointWalk: which rendezvous endpoint an agent tries next, and after how
// long, when --rdzv-endpoint lists replicas (PROTOCOL.md, "Replicas"). Pure:
// the client reports each attempt's outcome and waits the delay it is given.
//
// The walk:
//   - endpoints are tried in the order given; a failed attempt moves on to the
//     next one at once;
//   - a standby that names the leader (not_leader) sends the next attempt to
//     that leader, unless the leader already failed in this sweep (its lease
//     outlives it: following it again would only wait again), or it names a
//     leader elected since (a higher epoch), which is followed whatever
//     failed before;
//   - once every endpoint has failed (one sweep), the next sweep starts after
//     a pause: 50-100 ms (jittered), about a standby's poll period, when some
//     standby answered in the sweep (an election is under way) and the pace
//     is kElection, otherwise the usual jittered backoff (common/backoff.h,
//     50 ms doubling to 500 ms);
//   - a Welcome ends the walk: the next failure starts a sweep from the
//     endpoint that served;
//   - an endpoint that gave no answer (a connect or a Hello that timed out,
//     a leader gone quiet) is suspect for kSuspectFor: sweeps pass it by
//     while another replica answers, and a standby naming it is not
//     followed, so a dead host costs one timeout, not one per sweep. A sweep
//     in which nothing answered (every other endpoint refused, or every one
//     is suspect) goes on to the suspects before it pauses: a timeout costs
//     less than the fence it may avert (a replica whose link just came back
//     is still suspect, and may be the only one left to answer). An
//     endpoint that answers (a Welcome, a standby's word) is suspect no more.
//
// Thread-safety: a value; not shared.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/host_port.h"
#include "common/status.h"

namespace muster::rdzv {

// The value type lives with HostPort (common/host_port.h).
using muster::Endpoint;

// "HOST:PORT" as a standby names the leader (its --advertise). The error
// quotes the text.
Result<Endpoint> ParseLeader(std::string_view text);

class EndpointWalk {
 public:
  // How an attempt that did not serve this agent ended.
  enum class AttemptEnd {
    kNoAnswer,        // refused, timed out, closed, or never tried (no such host, traffic cut)
    kStandbyAnswered  // a standby answered, naming no leader to follow
  };
  // How soon a sweep in which a standby answered starts again.
  enum class Pace {
    kElection,  // workers may run here: at the standbys' poll period (kElectionPoll)
    kBackoff    // this agent has fenced: nothing is urgent, the usual backoff
  };

  explicit EndpointWalk(std::vector<Endpoint> endpoints);

  // More than one endpoint: the agent talks to replicas.
  bool replicated() const { return endpoints_.size() > 1; }
  const std::vector<Endpoint>& endpoints() const { return endpoints_; }
  // Where the next attempt goes.
  const Endpoint& Current() const { return redirect_ ? *redirect_ : endpoints_[index_]; }

  // The attempt at Current() did not serve this agent (`end` says how).
  // Returns the delay before the next one. `unit_random` in [0, 1) jitters
  // the backoff.
  std::chrono::milliseconds AfterFailure(AttemptEnd end, double unit_random);
  // The pause after a sweep a standby answered in; kElection until set.
  void set_pace(Pace pace) { pace_ = pace; }
  // A standby named `leader`: the next attempt goes there unless it failed in
  // this sweep or is suspect. The delay is AfterFailure's with an answer:
  // none within a sweep, the poll pause at its end. `newly_elected`: the
  // standby named a higher epoch than the agent had heard of, so `leader`
  // won an election after whatever failure is held against it (it timed out
  // while cut off, or answered as a standby a moment ago): it is cleared of
  // suspicion and followed.
  std::chrono::milliseconds AfterRedirect(const Endpoint& leader, double unit_random,
                                          bool newly_elected = false);
  // Current() answered, as a standby or with a Welcome: it is reachable, so
  // no longer suspect, and this sweep need not try the suspects.
  void Answered();
  // Current() served this agent (it answered, too).
  void AfterWelcome();
  // How many attempts this sweep has left before it pauses, Current()
  // included (at least 1): the endpoints that share the time left before
  // the fence (fence_rule.h, AttemptBound).
  size_t LeftInSweep() const;

  // The time the decisions below are made at (suspicions run out); returns
  // the walk, for chaining.
  EndpointWalk& At(Time now) {
    now_ = now;
    return *this;
  }
  void Suspect(const Endpoint& endpoint, Time now);
  bool IsSuspect(const Endpoint& endpoint, Time now) const;

  static constexpr std::chrono::milliseconds kSuspectFor{3000};
  static constexpr std::chrono::milliseconds kElectionPoll{100};
  static constexpr std::chrono::milliseconds kBackoffBase{50};
  static constexpr std::chrono::milliseconds kBackoffCap{500};

 private:
  std::vector<Endpoint> endpoints_;
  size_t index_ = 0;                    // the listed endpoint this sweep is at
  std::optional<Endpoint> redirect_;    // a leader named by a standby, tried next
  size_t failed_in_sweep_ = 0;          // listed endpoints failed in this sweep
  std::set<std::string> failed_texts_;  // every endpoint failed in this sweep
  bool answered_in_sweep_ = false;      // a standby answered: poll at its pace
  bool heard_in_sweep_ = false;         // any replica answered (Answered, or the above)
  bool suspects_too_ = false;           // this sweep goes on to the suspect endpoints
  int quiet_sweeps_ = 0;                // sweeps in a row with no replica answering
  Pace pace_ = Pace::kElection;
  std::map<std::string, Time> suspect_until_;  // by Text()
  Time now_{};
  // Listed endpoints a sweep tries: those not suspect, or all when every one
  // is or the sweep went on to the suspects.
  size_t Candidates() const;
  void EndSweep();
  bool Skipped(size_t index) const;
};

}  // namespace muster::rdzv
