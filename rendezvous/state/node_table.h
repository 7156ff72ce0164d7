// NodeTable: the nodes of one run, by node id, with two indexes kept in step:
// which node is on which connection, and the earliest time any node may be
// found dead (so a tick at 10,000 nodes skips the scan of every node until
// then). RunState owns one; it holds no rules beyond liveness:
//
//   - a node whose connection closed is dead `disconnect_grace` later unless
//     it joins again on a new one;
//   - a node not heard for longer than `heartbeat_timeout` is dead ("silent"),
//     connected or not.
//
// Pure: no clock is read, time comes in as arguments. Not thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "rendezvous/protocol/messages.h"
#include "rendezvous/state/events.h"
#include "rendezvous/state/settings.h"
#include "rendezvous/state/step_rates.h"

namespace muster::rdzv {

// One node of a run.
struct RunNode {
  std::string node_id;
  std::string host;
  ConnId conn = 0;  // 0: not connected. Changed only by NodeTable (Connected, Disconnected).
  Time last_seen;
  Time last_ack{};  // last HeartbeatAck sent
  std::optional<Time> disconnected_at;
  int local_world_size = 1;
  std::string store_addr;
  int store_port = 0;
  std::string peer_addr;  // where its connection came from, as the daemon saw it
  uint64_t join_seq = 0;
  bool member = false;  // in the current generation
  int group_rank = -1;  // in the current generation
  int global_rank_offset = 0;
  bool succeeded = false;              // its workers of the current generation all exited 0
  std::optional<Assignment> reported;  // what it ran when it (re)joined, for rebuilding
  StepRate step_rate;                  // from the steps its heartbeats carry
  // Its newest step in the current generation (0: none yet), and its
  // workers' own time per step by local rank (Heartbeat::compute_us, in
  // ms; 0: unknown). Both reset by a new generation.
  uint64_t step = 0;
  std::vector<double> compute_ms;
};

class NodeTable {
 public:
  // Hashed: a heartbeat looks its node up 20,000 times a second at 10,000
  // nodes (0.5 s keep_alive_interval). Nothing depends on its order.
  struct StringHash {
    using is_transparent = void;  // find() by string_view, without a copy
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Map = std::unordered_map<std::string, RunNode, StringHash, std::equal_to<>>;

  explicit NodeTable(const Settings& settings);

  // nullptr when the run has no node `node_id` (never joined, or dead).
  RunNode* Find(std::string_view node_id);
  // The node bound to `conn`; nullptr when none is.
  RunNode* FindByConn(ConnId conn);
  // The node `node_id` when `conn` is its connection; nullptr for a node the
  // run does not have or a message that came on another connection than the
  // node's.
  RunNode* NodeOn(ConnId conn, std::string_view node_id);

  // A new node `node_id`, not connected. REQUIRES: Find(node_id) == nullptr.
  RunNode& Add(const std::string& node_id);
  // Removes the node, and its connection from the index. No-op when absent.
  void Erase(std::string_view node_id);
  // `node` is now on `conn` (it joined or reconnected) and heard at `now`.
  void Connected(RunNode& node, ConnId conn, Time now);
  // `node` lost its connection at `now`; its disconnect grace starts.
  void Disconnected(RunNode& node, Time now);

  size_t size() const { return nodes_.size(); }
  size_t member_count() const;
  // No node is a member any more: each one's member flag clears, and its
  // group rank (meaningful for members only) with it.
  void ClearMembership();
  Map::iterator begin() { return nodes_.begin(); }
  Map::iterator end() { return nodes_.end(); }
  Map::const_iterator begin() const { return nodes_.begin(); }
  Map::const_iterator end() const { return nodes_.end(); }

  // --- liveness ---

  struct DeadNode {
    std::string node_id;
    std::string why;        // "disconnected" or "silent"
    ConnId close_conn = 0;  // a silent node's half-open connection, to close; 0: none
  };
  // The nodes dead at `now`, in no particular order. A silent node is unbound
  // from its connection here (close_conn names it); none is erased, so the
  // caller sees each one as it was. Cheap until the earliest deadline.
  std::vector<DeadNode> FindDead(Time now);

  // The daemon's loop stalled until `now`: heartbeats may sit unread, so
  // every connected node counts as heard now.
  void ForgiveStall(Time now);

 private:
  // node.conn = conn, keeping the connection index in step; 0 unbinds.
  void BindConn(RunNode& node, ConnId conn);
  // Called wherever `node`'s deadline may move earlier (Connected,
  // Disconnected): the next FindDead() must not skip past it.
  void NoteDeadline(const RunNode& node);
  // When FindDead() must look at `node`: the end of its disconnect grace, or
  // of its heartbeat silence.
  Time DeadlineOf(const RunNode& node) const;

  Duration heartbeat_timeout_;
  Duration disconnect_grace_;
  Map nodes_;
  // Node id by connection, for every node with conn != 0, so a disconnect
  // finds its node without a scan of every node.
  std::unordered_map<ConnId, std::string> conn_node_;
  // No node's deadline is earlier than this, so FindDead() skips its scan
  // until then (at 10,000 nodes the scan at every 50 ms tick cost more than
  // the heartbeats). Heartbeats only move deadlines later.
  Time next_check_{};
};

}  // namespace muster::rdzv
