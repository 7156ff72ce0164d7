#include "rendezvous/client/endpoint_walk.h"

#include <algorithm>

#include "common/backoff.h"
#include "common/clock.h"
#include "common/host_port.h"

namespace muster::rdzv {

Result<Endpoint> ParseLeader(std::string_view text) {
  auto parts = SplitEndpoint(text);
  if (!parts.ok()) return parts.status();
  if (!parts->port || *parts->port == 0) {
    return Status::InvalidArgument("leader '" + std::string(text) + "' names no port");
  }
  return Endpoint{parts->host, static_cast<uint16_t>(*parts->port)};
}

EndpointWalk::EndpointWalk(std::vector<Endpoint> endpoints) : endpoints_(std::move(endpoints)) {}

std::chrono::milliseconds EndpointWalk::AfterFailure(AttemptEnd end, double unit_random) {
  const bool replica_answered = end == AttemptEnd::kStandbyAnswered;
  failed_texts_.insert(Current().Text());
  answered_in_sweep_ = answered_in_sweep_ || replica_answered;
  heard_in_sweep_ = heard_in_sweep_ || replica_answered;
  if (redirect_) {
    // The listed endpoint that named this leader was counted already.
    redirect_.reset();
  } else {
    // A suspect tried anyway (it served, or was named) is no step of a sweep.
    if (!Skipped(index_)) ++failed_in_sweep_;
    index_ = (index_ + 1) % endpoints_.size();
    for (size_t hop = 0; hop < endpoints_.size() && Skipped(index_); ++hop) {
      index_ = (index_ + 1) % endpoints_.size();
    }
  }
  if (failed_in_sweep_ < Candidates()) return std::chrono::milliseconds(0);
  if (!heard_in_sweep_ && !suspects_too_ && Candidates() < endpoints_.size()) {
    // Nothing answered and suspects were passed by: with the fence clock
    // running, a suspect's timeout is the cheaper risk. The sweep goes on
    // from here to the suspects it has not tried.
    suspects_too_ = true;
    for (size_t hop = 0; hop < endpoints_.size(); ++hop) {
      if (!failed_texts_.contains(endpoints_[index_].Text())) break;
      index_ = (index_ + 1) % endpoints_.size();
    }
    return std::chrono::milliseconds(0);
  }
  // A whole sweep failed: pause before the next one.
  std::chrono::milliseconds delay;
  if (answered_in_sweep_ && pace_ == Pace::kElection) {
    // An election is under way (or the leader's lease still runs): look
    // again as often as the standbys read etcd.
    quiet_sweeps_ = 0;
    delay = std::chrono::milliseconds(static_cast<std::chrono::milliseconds::rep>(
        static_cast<double>(kElectionPoll.count()) * (0.5 + 0.5 * unit_random)));
  } else {
    delay = NextBackoff(quiet_sweeps_++, kBackoffBase, kBackoffCap, unit_random);
  }
  EndSweep();
  return delay;
}

void EndpointWalk::EndSweep() {
  failed_in_sweep_ = 0;
  failed_texts_.clear();
  answered_in_sweep_ = false;
  heard_in_sweep_ = false;
  suspects_too_ = false;
}

std::chrono::milliseconds EndpointWalk::AfterRedirect(const Endpoint& leader, double unit_random,
                                                      bool newly_elected) {
  const std::string answered_by = Current().Text();
  // A replica elected since it failed has renewed a lease with etcd: it is
  // up and reachable from etcd, whatever it did before. Cleared before the
  // sweep is counted, so it counts among the candidates again.
  if (newly_elected) suspect_until_.erase(leader.Text());
  const auto delay = AfterFailure(AttemptEnd::kStandbyAnswered, unit_random);
  // Not the standby that named it (a replica never names itself, but a
  // confused one must not loop here), nor a leader that failed in this
  // sweep or is suspect, unless it was elected since.
  if (leader.Text() == answered_by) return delay;
  if (!newly_elected && (failed_texts_.contains(leader.Text()) || IsSuspect(leader, now_))) {
    return delay;
  }
  // A listed leader is tried in its place in the list, so a sweep does not
  // try it twice; another one out of turn. At the end of a sweep, it comes
  // first after the pause.
  const auto listed = std::find(endpoints_.begin(), endpoints_.end(), leader);
  if (listed != endpoints_.end()) {
    index_ = static_cast<size_t>(listed - endpoints_.begin());
  } else {
    redirect_ = leader;
  }
  return delay;
}

void EndpointWalk::Suspect(const Endpoint& endpoint, Time now) {
  suspect_until_[endpoint.Text()] = now + kSuspectFor;
}

bool EndpointWalk::IsSuspect(const Endpoint& endpoint, Time now) const {
  const auto it = suspect_until_.find(endpoint.Text());
  return it != suspect_until_.end() && now < it->second;
}

size_t EndpointWalk::Candidates() const {
  if (suspects_too_) return endpoints_.size();
  size_t clear = 0;
  for (const Endpoint& e : endpoints_) clear += IsSuspect(e, now_) ? 0 : 1;
  return clear == 0 ? endpoints_.size() : clear;
}

bool EndpointWalk::Skipped(size_t index) const {
  return Candidates() != endpoints_.size() && IsSuspect(endpoints_[index], now_);
}

void EndpointWalk::Answered() {
  suspect_until_.erase(Current().Text());
  heard_in_sweep_ = true;
}

size_t EndpointWalk::LeftInSweep() const {
  const size_t candidates = Candidates();
  const size_t listed = failed_in_sweep_ < candidates ? candidates - failed_in_sweep_ : 1;
  // A leader named out of the list comes before the rest of the sweep.
  return listed + (redirect_ ? 1 : 0);
}

void EndpointWalk::AfterWelcome() {
  Answered();
  EndSweep();
  quiet_sweeps_ = 0;
}

}  // namespace muster::rdzv
