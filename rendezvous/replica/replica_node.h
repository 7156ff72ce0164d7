// ReplicaNode: the I/O shell of one replica's LeaderElection. A thread of
// its own ticks the election every 50 ms and carries its actions out against
// etcd (EtcdClient, blocking calls bounded by a deadline), so a slow etcd
// never stalls the daemon's io_context; every change of role or view is
// handed to `on_status` (from that thread: the daemon posts it to its
// io_context, RendezvousServer::SetReplicaStatus).
//
//   ReplicaNode node({.etcd = endpoints, .key = "/muster/musterd",
//                     .advertise = "10.0.0.1:29400"},
//                    [&](ReplicaStatus s) { asio::post(io, [&, s] { server->SetReplicaStatus(s);
//                    }); });
//   node.Start();
//   ...
//   node.Stop();  // the server stopped first: revokes the lease lead_margin later
//
// Beside the election it keeps, under `prefix`:
//   - musterd/replicas/ADVERTISE, bound to its lease: the replicas alive,
//     read back every second for status (ReplicaStatus::replicas);
//   - runs/RUN_ID, the run records (run_record_json.h): the leader writes
//     those the server hands it (WriteRunRecords) in a transaction that
//     commits only while the election key is still the one it created, so a
//     deposed leader cannot overwrite its successor's; a replica that takes
//     the lead reads them all before it says it leads
//     (ReplicaStatus::run_records), and serves nobody until it has.
//
// Logs (spdlog): event=replica_leader epoch=N, event=replica_step_down
// why="...", event=replica_view leader=... epoch=N fresh=..., event=etcd_failed
// call=... why="..." (at most once a second per call kind).
//
// Thread-safety: Start and Stop from one thread; `on_status` runs on the
// node's thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rendezvous/replica/etcd_client.h"
#include "rendezvous/replica/leader_election.h"
#include "rendezvous/state/replica_status.h"

namespace muster::rdzv::replica {

struct ReplicaOptions {
  std::vector<EtcdEndpoint> etcd;
  EtcdTls etcd_tls;                            // for https:// endpoints
  std::string key = "/muster/musterd/leader";  // the election key
  std::string prefix = "/muster/";             // the registry and run records live under it
  std::string advertise;                       // this replica's HOST:PORT, as agents reach it
  ElectionSettings election;
  std::chrono::milliseconds etcd_timeout{400};  // per etcd call and endpoint
};

class ReplicaNode {
 public:
  ReplicaNode(ReplicaOptions options, std::function<void(ReplicaStatus)> on_status);
  ~ReplicaNode();  // Stop()
  ReplicaNode(const ReplicaNode&) = delete;
  ReplicaNode& operator=(const ReplicaNode&) = delete;

  void Start();
  // Ends the thread; a held lease is revoked (best effort, one deadline).
  void Stop();
  // Thread-safe: records to write while this replica leads (the latest of
  // each run wins); dropped when it does not.
  void WriteRunRecords(std::vector<RunRecord> records);

 private:
  void Run();
  // Carries `action` out; the election's answer to its result, if any.
  std::vector<ElectionAction> Do(const ElectionAction& action);
  std::vector<ElectionAction> DoOrThrow(const ElectionAction& action);
  bool Stopping();
  void Publish();
  // A lease given back after leading waits until lead_margin after this
  // replica stopped serving.
  void WaitOutLeadMargin();
  // The registry and the run records, once per tick.
  void KeepRecords();
  // Taking the lead: the run records etcd holds, or none when it cannot say.
  void ReadRunRecords();

  ReplicaOptions options_;
  std::function<void(ReplicaStatus)> on_status_;
  EtcdClient etcd_;
  LeaderElection election_;
  int64_t lease_id_ = 0;  // the last granted, for Stop's revoke
  std::thread thread_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  ReplicaStatus published_;
  std::map<std::string, RunRecord, std::less<>> pending_records_;  // under mutex_
  std::map<std::string, RunRecord, std::less<>> leader_records_;
  std::vector<std::string> replicas_;
  int64_t registered_lease_ = 0;  // the lease the registry key was put with
  uint64_t records_epoch_ = 0;    // the epoch leader_records_ were read for
  Time stopped_leading_at_{};     // when it last published that it stopped leading
  Time next_registry_read_{};
  Time last_etcd_warning_{};
};

}  // namespace muster::rdzv::replica
