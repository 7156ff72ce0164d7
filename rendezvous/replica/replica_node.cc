#include "rendezvous/replica/replica_node.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "common/exhaustive_visit.h"
#include "rendezvous/replica/run_record_json.h"

namespace muster::rdzv::replica {
namespace {

constexpr std::chrono::milliseconds kTick{50};
// How often the registry of replicas is read back (for status only).
constexpr std::chrono::milliseconds kRegistryPeriod{1000};

// etcd grants whole seconds; a TTL below its minimum (2 s at etcd's default
// election timeout) is raised by etcd, and the grant's answer says so.
int64_t Seconds(std::chrono::milliseconds ttl) { return (ttl.count() + 999) / 1000; }

}  // namespace

ReplicaNode::ReplicaNode(ReplicaOptions options, std::function<void(ReplicaStatus)> on_status)
    : options_(std::move(options)),
      on_status_(std::move(on_status)),
      etcd_(options_.etcd, options_.etcd_timeout, options_.etcd_tls),
      election_(options_.advertise, options_.election, Clock::now()) {
  published_.replicated = true;
  published_.role = Role::kStarting;
  published_.self = options_.advertise;
}

ReplicaNode::~ReplicaNode() { Stop(); }

void ReplicaNode::Start() {
  thread_ = std::thread([this] { Run(); });
}

void ReplicaNode::Stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool ReplicaNode::Stopping() {
  std::lock_guard lock(mutex_);
  return stopping_;
}

void ReplicaNode::Run() {
  Publish();
  std::vector<ElectionAction> pending = election_.Start();
  while (true) {
    while (!pending.empty()) {
      std::vector<ElectionAction> next;
      for (const ElectionAction& action : pending) {
        if (Stopping()) break;
        std::vector<ElectionAction> more = Do(action);
        next.insert(next.end(), more.begin(), more.end());
        // At once: the next action may wait on etcd for a whole deadline.
        Publish();
      }
      pending = Stopping() ? std::vector<ElectionAction>() : std::move(next);
    }
    std::unique_lock lock(mutex_);
    if (wake_.wait_for(lock, kTick, [this] { return stopping_; })) break;
    lock.unlock();
    KeepRecords();
    pending = election_.Handle(Tick{Clock::now()});
  }
  // Leaving: a lease given back deletes the key, so a standby leads
  // lead_margin after this replica stopped serving (the server stopped
  // first) instead of after the TTL.
  if (lease_id_ != 0) {
    if (published_.leading) stopped_leading_at_ = Clock::now();
    WaitOutLeadMargin();
    if (Status s = etcd_.RevokeLease(lease_id_); !s.ok()) {
      spdlog::warn("event=etcd_failed call=revoke why=\"{}\"", s.message());
    }
  }
}

std::vector<ElectionAction> ReplicaNode::Do(const ElectionAction& action) {
  // A body etcd sends with a field of an unexpected type throws in the JSON
  // library: that is a failed call, not the end of the process.
  try {
    return DoOrThrow(action);
  } catch (const std::exception& e) {
    using Call = std::optional<EtcdCall>;
    const Call call = VisitEvery(
        action, [](const GrantLease&) -> Call { return EtcdCall::kGrantLease; },
        [](const KeepAlive&) -> Call { return EtcdCall::kKeepAlive; },
        [](const Campaign&) -> Call { return EtcdCall::kCampaign; },
        [](const ReadLeader&) -> Call { return EtcdCall::kReadLeader; },
        // Nothing the election waits for an answer to.
        [](const OneOf<BecomeLeader, StepDown, RevokeLease, ViewChanged> auto&) -> Call {
          return std::nullopt;
        });
    spdlog::warn("event=etcd_failed why=\"{}\"", e.what());
    if (!call) return {};
    return election_.Handle(EtcdFailed{.call = *call, .why = e.what(), .at = Clock::now()});
  }
}

std::vector<ElectionAction> ReplicaNode::DoOrThrow(const ElectionAction& action) {
  const auto failed = [&](EtcdCall call, const Status& status) {
    const auto now = Clock::now();
    if (now - last_etcd_warning_ >= std::chrono::seconds(1)) {
      last_etcd_warning_ = now;
      spdlog::warn("event=etcd_failed call={} why=\"{}\"", EtcdCallName(call), status.message());
    }
    return election_.Handle(EtcdFailed{.call = call, .why = status.message(), .at = now});
  };
  const auto sent_at = Clock::now();
  using Next = std::vector<ElectionAction>;
  return VisitEvery(
      action,
      [&](const GrantLease&) -> Next {
        Result<GrantedLease> lease = etcd_.GrantLease(Seconds(options_.election.lease_ttl));
        if (!lease.ok()) return failed(EtcdCall::kGrantLease, lease.status());
        lease_id_ = lease->id;
        return election_.Handle(LeaseGranted{.lease_id = lease->id,
                                             .ttl = std::chrono::seconds(lease->ttl_seconds),
                                             .sent_at = sent_at});
      },
      [&](const KeepAlive& keep) -> Next {
        Result<int64_t> ttl = etcd_.KeepAlive(keep.lease_id);
        if (!ttl.ok()) return failed(EtcdCall::kKeepAlive, ttl.status());
        return election_.Handle(KeepAliveDone{
            .lease_id = keep.lease_id, .ttl = std::chrono::seconds(*ttl), .sent_at = sent_at});
      },
      [&](const Campaign& campaign) -> Next {
        Result<CampaignOutcome> outcome =
            etcd_.Campaign(options_.key, options_.advertise, campaign.lease_id);
        if (!outcome.ok()) return failed(EtcdCall::kCampaign, outcome.status());
        CampaignDone done{
            .won = outcome->won, .leader = "", .epoch = 0, .lease = 0, .sent_at = sent_at};
        if (outcome->won) {
          done.leader = options_.advertise;
          done.epoch = static_cast<uint64_t>(outcome->revision);
          done.lease = campaign.lease_id;
        } else if (outcome->held) {
          done.leader = outcome->held->value;
          done.epoch = static_cast<uint64_t>(outcome->held->create_revision);
          done.lease = outcome->held->lease;
        }
        return election_.Handle(done);
      },
      [&](const ReadLeader&) -> Next {
        Result<std::optional<KeyValue>> key = etcd_.Read(options_.key);
        if (!key.ok()) return failed(EtcdCall::kReadLeader, key.status());
        LeaderRead read{
            .present = key->has_value(), .leader = "", .epoch = 0, .lease = 0, .sent_at = sent_at};
        if (*key) {
          read.leader = (*key)->value;
          read.epoch = static_cast<uint64_t>((*key)->create_revision);
          read.lease = (*key)->lease;
        }
        return election_.Handle(read);
      },
      [&](const RevokeLease& revoke) -> Next {
        if (revoke.lease_id == lease_id_) lease_id_ = 0;
        WaitOutLeadMargin();
        if (Status s = etcd_.RevokeLease(revoke.lease_id); !s.ok()) {
          spdlog::warn("event=etcd_failed call=revoke why=\"{}\"", s.message());
        }
        return {};
      },
      [&](const BecomeLeader& became) -> Next {
        ReadRunRecords();
        spdlog::info("event=replica_leader epoch={} advertise={} etcd={} runs={}", became.epoch,
                     options_.advertise, etcd_.current_endpoint(),
                     records_epoch_ == became.epoch ? std::to_string(leader_records_.size())
                                                    : std::string("unread"));
        return {};
      },
      [](const StepDown& down) -> Next {
        spdlog::warn("event=replica_step_down why=\"{}\"", down.why);
        return {};
      },
      [](const ViewChanged& changed) -> Next {
        spdlog::info("event=replica_view leader={} epoch={} fresh={}",
                     changed.view.leader.empty() ? "-" : changed.view.leader, changed.view.epoch,
                     changed.view.fresh);
        return {};
      });
}

void ReplicaNode::Publish() {
  ReplicaStatus status;
  status.replicated = true;
  // A new leader serves once it has read the run records of its epoch.
  status.leading = election_.role() == Role::kLeader && records_epoch_ == election_.epoch();
  status.lead_until = status.leading ? election_.lead_until() : Time{};
  status.epoch = election_.view().epoch;
  status.leader = election_.view().leader;
  status.fresh = election_.view().fresh;
  // Moves with every read (every 100 ms): a standby's answers need it.
  status.view_read_at = election_.view_read_at();
  status.role = election_.role();
  status.self = options_.advertise;
  status.lead_margin = options_.election.step_down_margin;
  status.replicas = replicas_;
  if (status.leading) status.run_records = leader_records_;
  // lead_until moves with every renewal: the server needs each one.
  if (status == published_) return;
  if (published_.leading && !status.leading) stopped_leading_at_ = Clock::now();
  published_ = status;
  on_status_(status);
}

void ReplicaNode::WaitOutLeadMargin() {
  // Agents heard this replica up to the moment it stopped serving; the
  // next leader must not lead sooner than lead_margin after that, or it
  // could form a generation before an agent cut off from it has fenced
  // (PROTOCOL.md, "Why no generation forms behind a kept worker").
  const auto until = stopped_leading_at_ + options_.election.step_down_margin;
  if (Clock::now() < until) std::this_thread::sleep_until(until);
}

void ReplicaNode::WriteRunRecords(std::vector<RunRecord> records) {
  std::lock_guard lock(mutex_);
  for (RunRecord& record : records) pending_records_[record.run_id] = std::move(record);
}

void ReplicaNode::ReadRunRecords() {
  leader_records_.clear();
  Result<std::vector<KeyValue>> keys = etcd_.ReadPrefix(options_.prefix + "runs/");
  if (!keys.ok()) {
    // Not serving without them (KeepRecords tries again each tick): a
    // leader that starts its runs afresh would overwrite their budgets.
    spdlog::warn("event=etcd_failed call=read_runs why=\"{}\"", keys.status().message());
    return;
  }
  records_epoch_ = election_.epoch();
  for (const KeyValue& key : *keys) {
    Result<RunRecord> record = DecodeRunRecord(key.value);
    if (!record.ok()) {
      spdlog::warn("event=run_record_unreadable key={} why=\"{}\"", key.key,
                   record.status().message());
      continue;
    }
    leader_records_[record->run_id] = std::move(record).value();
  }
}

void ReplicaNode::KeepRecords() {
  const auto now = Clock::now();
  if (election_.role() == Role::kLeader && records_epoch_ != election_.epoch()) {
    ReadRunRecords();
    Publish();
  }
  if (lease_id_ != 0 && registered_lease_ != lease_id_) {
    Status put = etcd_.Put(options_.prefix + "musterd/replicas/" + options_.advertise,
                           options_.advertise, lease_id_);
    if (put.ok()) {
      registered_lease_ = lease_id_;
    } else {
      spdlog::debug("event=etcd_failed call=register why=\"{}\"", put.message());
    }
  }
  if (now >= next_registry_read_) {
    next_registry_read_ = now + kRegistryPeriod;
    Result<std::vector<KeyValue>> keys = etcd_.ReadPrefix(options_.prefix + "musterd/replicas/");
    if (keys.ok()) {
      std::vector<std::string> replicas;
      for (const KeyValue& key : *keys) replicas.push_back(key.value);
      std::sort(replicas.begin(), replicas.end());
      if (replicas != replicas_) {
        replicas_ = std::move(replicas);
        Publish();
      }
    }
  }
  std::map<std::string, RunRecord, std::less<>> pending;
  {
    std::lock_guard lock(mutex_);
    pending.swap(pending_records_);
  }
  if (pending.empty() || !election_.MayLead(now)) return;  // a lost lead's records go
  const auto epoch = static_cast<int64_t>(election_.epoch());
  for (auto it = pending.begin(); it != pending.end(); ++it) {
    Result<bool> written = etcd_.GuardedPut(
        options_.key, epoch, options_.prefix + "runs/" + it->first, EncodeRunRecord(it->second));
    if (!written.ok()) {
      // Kept for the next tick, unless the server has a newer one by then.
      spdlog::debug("event=etcd_failed call=write_run why=\"{}\"", written.status().message());
      std::lock_guard lock(mutex_);
      for (auto rest = it; rest != pending.end(); ++rest) pending_records_.insert(*rest);
      return;
    }
    if (!*written) {
      spdlog::warn(
          "event=run_record_refused run_id={} why=\"the election key is no longer this "
          "leader's (epoch {})\"",
          it->first, epoch);
      return;
    }
  }
}

}  // namespace muster::rdzv::replica
