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
//   node.Stop();  // revokes the lease: another replica can lead at once
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
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rendezvous/daemon/replica_status.h"
#include "rendezvous/replica/etcd_client.h"
#include "rendezvous/replica/leader_election.h"

namespace muster::rdzv::replica {

struct ReplicaOptions {
  std::vector<EtcdEndpoint> etcd;
  std::string key = "/muster/musterd";  // the election key
  std::string advertise;                // this replica's HOST:PORT, as agents reach it
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

 private:
  void Run();
  // Carries `action` out; the election's answer to its result, if any.
  std::vector<ElectionAction> Do(const ElectionAction& action);
  std::vector<ElectionAction> DoOrThrow(const ElectionAction& action);
  bool Stopping();
  void Publish();

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
  Clock::time_point last_etcd_warning_{};
};

}  // namespace muster::rdzv::replica
