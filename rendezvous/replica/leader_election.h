// LeaderElection: one musterd replica's part in electing the leader of a
// replicated rendezvous through etcd; a pure object (events in, actions out,
// time passed in), so every rule is a row of a table test
// (tests/unit/rdzv_replica_election_test.cc). The I/O shell
// (replica_node.h) carries the actions out against etcd and feeds the
// results back.
//
// The election, on etcd's primitives:
//   - every replica holds a lease of `lease_ttl` (GrantLease), renewed every
//     `renew_interval` (KeepAlive) whatever its role;
//   - to campaign, a replica creates the election key with its lease if the
//     key is absent (Campaign: a transaction on create_revision == 0); the
//     replica whose create succeeded leads, and the key's create_revision is
//     its epoch: etcd's revision only grows, so a later leadership always has
//     a higher epoch; a key bound to the replica's own live lease is its win
//     too (a create that committed though its answer was lost);
//   - standbys read the key (ReadLeader) every `poll_interval`: it names the
//     leader and its epoch; when it is gone (the leader's lease expired or
//     was revoked) they campaign at once.
//
// Fencing: a leader counts its lease valid until the send time of its last
// successful renewal plus the TTL etcd granted, and steps down
// `step_down_margin` before that (StepDown), so it has stopped acting before
// etcd can expire the lease and another replica can win. A renewal that
// fails (the lease is gone, etcd unreachable) steps it down at once. A
// standby's view of the leader is fresh while its last read is younger than
// the lease TTL; a stale view is no evidence of anything (LeaderView::fresh).
// A lease that was not renewed within its TTL is given up and a new one
// granted, whatever the role.
//
// Thread-safety: none; one owner.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/clock.h"
#include "rendezvous/state/role.h"

namespace muster::rdzv::replica {

using std::chrono::milliseconds;

struct ElectionSettings {
  milliseconds lease_ttl{2000};        // asked of etcd; it may grant more
  milliseconds renew_interval{500};    // KeepAlive period (< lease_ttl - step_down_margin)
  milliseconds step_down_margin{600};  // stop leading this long before the lease can expire
  milliseconds poll_interval{100};     // a standby's ReadLeader period
  milliseconds retry_interval{250};    // after a failed etcd call
};

// Why `settings` cannot work, or nullopt: every interval positive, the margin
// shorter than the TTL, and a renewal due before the margin starts
// (renew_interval < lease_ttl - step_down_margin).
std::optional<std::string> CheckElectionSettings(const ElectionSettings& settings);

// What this replica knows of the leader.
struct LeaderView {
  std::string leader;  // its advertised HOST:PORT; empty: none (election in progress)
  uint64_t epoch = 0;  // its epoch; 0 when there is none
  bool fresh = false;  // read from etcd within the lease TTL
  bool operator==(const LeaderView&) const = default;
};

// --- events: results of the actions, and the clock ---------------------------

struct LeaseGranted {
  int64_t lease_id = 0;
  milliseconds ttl{0};
  Time sent_at;
};
struct KeepAliveDone {
  int64_t lease_id = 0;
  milliseconds ttl{0};  // the TTL etcd renewed it to; 0: the lease is gone
  Time sent_at;
};
struct CampaignDone {
  bool won = false;
  std::string leader;  // the key's value: the winner's advertised address
  uint64_t epoch = 0;  // the key's create_revision
  int64_t lease = 0;   // the lease the key is bound to
  Time sent_at;
};
struct LeaderRead {
  bool present = false;
  std::string leader;
  uint64_t epoch = 0;
  int64_t lease = 0;
  Time sent_at;
};
// An etcd call failed (unreachable, timed out, an error reply).
enum class EtcdCall { kGrantLease, kKeepAlive, kCampaign, kReadLeader };
const char* EtcdCallName(EtcdCall call);  // "grant_lease", ...
struct EtcdFailed {
  EtcdCall call = EtcdCall::kGrantLease;
  std::string why;
  Time at;
};
struct Tick {
  Time now;
};
using ElectionEvent =
    std::variant<LeaseGranted, KeepAliveDone, CampaignDone, LeaderRead, EtcdFailed, Tick>;

// --- actions ------------------------------------------------------------------

struct GrantLease {};
struct KeepAlive {
  int64_t lease_id = 0;
};
struct Campaign {
  int64_t lease_id = 0;
};
struct ReadLeader {};
struct BecomeLeader {
  uint64_t epoch = 0;
};
struct StepDown {
  std::string why;
};
// Best effort, after a step-down: a lease given up lets another replica win
// before it would expire. The shell gives it back no sooner than
// step_down_margin after it stopped serving (replica_node.h).
struct RevokeLease {
  int64_t lease_id = 0;
};
// The view changed (a new leader, an epoch, freshness); the shell answers
// agents with it.
struct ViewChanged {
  LeaderView view;
};
using ElectionAction = std::variant<GrantLease, KeepAlive, Campaign, ReadLeader, BecomeLeader,
                                    StepDown, RevokeLease, ViewChanged>;

class LeaderElection {
 public:
  // `advertise`: this replica's HOST:PORT, the value it puts in the key.
  LeaderElection(std::string advertise, ElectionSettings settings, Time now);

  // The first actions (GrantLease). The shell then sends a Tick every few
  // tens of milliseconds, and every action's result as an event.
  std::vector<ElectionAction> Start();
  std::vector<ElectionAction> Handle(const ElectionEvent& event);

  Role role() const { return role_; }
  const LeaderView& view() const { return view_; }
  // When the view was last read from etcd (the read's send time), changed
  // or not.
  Time view_read_at() const { return view_read_at_; }
  // Leader: until when it may act (lease valid minus the margin); a shell
  // checks it before handling anything, so a leader stopped and resumed
  // past it does not act on old input.
  bool MayLead(Time now) const;
  uint64_t epoch() const { return role_ == Role::kLeader ? view_.epoch : 0; }
  // Leader: the moment MayLead() turns false (unless a renewal moves it).
  Time lead_until() const { return lease_valid_until_ - settings_.step_down_margin; }

 private:
  void OnTick(Time now, std::vector<ElectionAction>& out);
  void OnKeepAlive(const KeepAliveDone& done, std::vector<ElectionAction>& out);
  void OnCampaign(const CampaignDone& done, std::vector<ElectionAction>& out);
  void OnRead(const LeaderRead& read, std::vector<ElectionAction>& out);
  void OnFailed(const EtcdFailed& failed, std::vector<ElectionAction>& out);
  // The lease is gone or can no longer be trusted: a leader steps down.
  void DropLease(Time now, const std::string& why, std::vector<ElectionAction>& out);
  // Campaigns unless one is under way, or the lease is too close to its end
  // for a win to be of use (it lapses and a new one is granted instead).
  void CampaignNow(Time now, std::vector<ElectionAction>& out);
  // The key names this replica's own live lease: a campaign etcd committed
  // though its answer was lost (a timeout, a retry on another member) is
  // a win all the same.
  bool HoldsKey(int64_t key_lease) const { return key_lease != 0 && key_lease == lease_id_; }
  void Lead(uint64_t epoch, Time read_at, std::vector<ElectionAction>& out);
  void SetView(LeaderView view, Time read_at, std::vector<ElectionAction>& out);

  const std::string advertise_;
  const ElectionSettings settings_;
  Role role_ = Role::kStarting;
  LeaderView view_;
  Time view_read_at_{};

  int64_t lease_id_ = 0;  // 0: none held
  milliseconds lease_ttl_{0};
  Time lease_valid_until_{};  // last renewal's send time + TTL
  bool granting_ = false;     // a GrantLease is in flight
  bool renewing_ = false;     // a KeepAlive is in flight
  bool campaigning_ = false;  // a Campaign is in flight
  bool reading_ = false;      // a ReadLeader is in flight
  Time next_renew_{};
  Time next_read_{};
  Time retry_at_{};  // no GrantLease before this after a failure
};

}  // namespace muster::rdzv::replica
