#include "rendezvous/replica/leader_election.h"

#include <algorithm>
#include <utility>

#include "common/exhaustive_visit.h"

namespace muster::rdzv::replica {

const char* EtcdCallName(EtcdCall call) {
  switch (call) {
    case EtcdCall::kGrantLease:
      return "grant_lease";
    case EtcdCall::kKeepAlive:
      return "keep_alive";
    case EtcdCall::kCampaign:
      return "campaign";
    case EtcdCall::kReadLeader:
      return "read_leader";
  }
  return "?";
}

std::optional<std::string> CheckElectionSettings(const ElectionSettings& s) {
  const auto ms = [](milliseconds d) { return std::to_string(d.count()) + " ms"; };
  for (const auto& [name, value] :
       {std::pair{"lease_ttl", s.lease_ttl}, std::pair{"renew_interval", s.renew_interval},
        std::pair{"step_down_margin", s.step_down_margin},
        std::pair{"poll_interval", s.poll_interval},
        std::pair{"retry_interval", s.retry_interval}}) {
    if (value.count() <= 0) return std::string(name) + " " + ms(value) + " is not positive";
  }
  if (s.step_down_margin >= s.lease_ttl) {
    return "step_down_margin " + ms(s.step_down_margin) + " is not shorter than lease_ttl " +
           ms(s.lease_ttl);
  }
  if (s.renew_interval >= s.lease_ttl - s.step_down_margin) {
    return "renew_interval " + ms(s.renew_interval) +
           " leaves no renewal before the leader must step down (lease_ttl " + ms(s.lease_ttl) +
           " - step_down_margin " + ms(s.step_down_margin) + ")";
  }
  return std::nullopt;
}

LeaderElection::LeaderElection(std::string advertise, ElectionSettings settings, Time now)
    : advertise_(std::move(advertise)), settings_(settings), retry_at_(now) {}

std::vector<ElectionAction> LeaderElection::Start() {
  granting_ = true;
  std::vector<ElectionAction> out;
  out.emplace_back(GrantLease{});
  return out;
}

bool LeaderElection::MayLead(Time now) const {
  return role_ == Role::kLeader && now < lease_valid_until_ - settings_.step_down_margin;
}

// Actions are built in the vector from their alternative (emplace_back):
// g++ 12 at -O2 warns, wrongly, that a moved-from variant temporary may be
// uninitialized (as rendezvous/state/refusal.cc says).
std::vector<ElectionAction> LeaderElection::Handle(const ElectionEvent& event) {
  std::vector<ElectionAction> out;
  VisitEvery(
      event,
      [&](const LeaseGranted& granted) {
        granting_ = false;
        lease_id_ = granted.lease_id;
        lease_ttl_ = granted.ttl;
        lease_valid_until_ = granted.sent_at + granted.ttl;
        next_renew_ = granted.sent_at + settings_.renew_interval;
        if (role_ == Role::kStarting) role_ = Role::kStandby;
        // Campaigning also reads the leader: a lost campaign returns the key.
        CampaignNow(granted.sent_at, out);
      },
      [&](const KeepAliveDone& renewed) { OnKeepAlive(renewed, out); },
      [&](const CampaignDone& campaign) { OnCampaign(campaign, out); },
      [&](const LeaderRead& read) { OnRead(read, out); },
      [&](const EtcdFailed& failed) { OnFailed(failed, out); },
      [&](const Tick& tick) { OnTick(tick.now, out); });
  return out;
}

void LeaderElection::OnKeepAlive(const KeepAliveDone& done, std::vector<ElectionAction>& out) {
  renewing_ = false;
  if (done.lease_id != lease_id_ || lease_id_ == 0) return;  // a lease given up since
  if (done.ttl.count() <= 0) {
    DropLease(done.sent_at, "the lease expired at etcd", out);
    return;
  }
  // Counted from the request's send time: etcd renewed it at some moment
  // after that, so the lease lives at least this long.
  lease_valid_until_ = std::max(lease_valid_until_, done.sent_at + done.ttl);
  next_renew_ = done.sent_at + settings_.renew_interval;
}

void LeaderElection::OnCampaign(const CampaignDone& done, std::vector<ElectionAction>& out) {
  campaigning_ = false;
  if (lease_id_ == 0) return;  // the lease was given up meanwhile: campaign again with a new one
  if (done.won || HoldsKey(done.lease)) {
    Lead(done.epoch, done.sent_at, out);
    return;
  }
  SetView({.leader = done.leader, .epoch = done.epoch, .fresh = true}, done.sent_at, out);
  next_read_ = done.sent_at + settings_.poll_interval;
}

void LeaderElection::OnRead(const LeaderRead& read, std::vector<ElectionAction>& out) {
  reading_ = false;
  if (role_ == Role::kLeader) return;
  next_read_ = read.sent_at + settings_.poll_interval;
  if (read.present && HoldsKey(read.lease)) {
    Lead(read.epoch, read.sent_at, out);
    return;
  }
  if (read.present) {
    SetView({.leader = read.leader, .epoch = read.epoch, .fresh = true}, read.sent_at, out);
    return;
  }
  // No leader: the election is open; whoever creates the key first wins.
  SetView({.leader = "", .epoch = 0, .fresh = true}, read.sent_at, out);
  CampaignNow(read.sent_at, out);
}

void LeaderElection::Lead(uint64_t epoch, Time read_at, std::vector<ElectionAction>& out) {
  role_ = Role::kLeader;
  out.emplace_back(BecomeLeader{epoch});
  SetView({.leader = advertise_, .epoch = epoch, .fresh = true}, read_at, out);
}

void LeaderElection::OnFailed(const EtcdFailed& failed, std::vector<ElectionAction>& /*out*/) {
  switch (failed.call) {
    case EtcdCall::kGrantLease:
      granting_ = false;
      retry_at_ = failed.at + settings_.retry_interval;
      break;
    case EtcdCall::kKeepAlive:
      // Tried again after retry_interval; a leader that cannot renew in
      // time steps down at its deadline (OnTick).
      renewing_ = false;
      next_renew_ = failed.at + settings_.retry_interval;
      break;
    case EtcdCall::kCampaign:
      campaigning_ = false;
      next_read_ = failed.at + settings_.retry_interval;
      break;
    case EtcdCall::kReadLeader:
      reading_ = false;
      next_read_ = failed.at + settings_.retry_interval;
      break;
  }
}

void LeaderElection::OnTick(Time now, std::vector<ElectionAction>& out) {
  if (role_ == Role::kLeader && !MayLead(now)) {
    DropLease(now, "the lease was not renewed in time", out);
  } else if (lease_id_ != 0 && role_ != Role::kLeader && now >= lease_valid_until_) {
    DropLease(now, "the lease was not renewed within its TTL", out);
  }
  if (lease_id_ == 0) {
    if (!granting_ && now >= retry_at_) {
      granting_ = true;
      out.emplace_back(GrantLease{});
    }
    return;
  }
  if (!renewing_ && now >= next_renew_) {
    renewing_ = true;
    out.emplace_back(KeepAlive{lease_id_});
  }
  if (role_ == Role::kLeader) return;
  if (view_.fresh && now - view_read_at_ >= lease_ttl_) {
    SetView({.leader = view_.leader, .epoch = view_.epoch, .fresh = false}, view_read_at_, out);
  }
  if (!reading_ && !campaigning_ && now >= next_read_) {
    reading_ = true;
    out.emplace_back(ReadLeader{});
  }
}

void LeaderElection::DropLease(Time now, const std::string& why, std::vector<ElectionAction>& out) {
  const int64_t given_up = lease_id_;
  lease_id_ = 0;
  retry_at_ = now;
  if (role_ == Role::kLeader) {
    role_ = Role::kStandby;
    out.emplace_back(StepDown{why});
    // Nobody is known to lead now; the next read says who does.
    SetView({.leader = "", .epoch = 0, .fresh = false}, view_read_at_, out);
  }
  if (given_up != 0) out.emplace_back(RevokeLease{given_up});
}

void LeaderElection::CampaignNow(Time now, std::vector<ElectionAction>& out) {
  if (campaigning_ || lease_id_ == 0) return;
  if (now >= lease_valid_until_ - settings_.step_down_margin) return;
  campaigning_ = true;
  out.emplace_back(Campaign{lease_id_});
}

void LeaderElection::SetView(LeaderView view, Time read_at, std::vector<ElectionAction>& out) {
  view_read_at_ = read_at;
  if (view == view_) return;
  view_ = std::move(view);
  out.emplace_back(ViewChanged{view_});
}

}  // namespace muster::rdzv::replica
