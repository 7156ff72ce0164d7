#include "rendezvous/state/node_table.h"

#include <algorithm>

namespace muster::rdzv {

NodeTable::NodeTable(const Settings& settings)
    : heartbeat_timeout_(settings.heartbeat_timeout),
      disconnect_grace_(settings.disconnect_grace) {}

RunNode* NodeTable::Find(std::string_view node_id) {
  auto it = nodes_.find(node_id);
  return it == nodes_.end() ? nullptr : &it->second;
}

RunNode* NodeTable::FindByConn(ConnId conn) {
  auto it = conn_node_.find(conn);
  return it == conn_node_.end() ? nullptr : Find(it->second);
}

RunNode* NodeTable::NodeOn(ConnId conn, std::string_view node_id) {
  RunNode* node = Find(node_id);
  return node != nullptr && node->conn == conn ? node : nullptr;
}

RunNode& NodeTable::Add(const std::string& node_id) {
  RunNode& node = nodes_.emplace(node_id, RunNode{}).first->second;
  node.node_id = node_id;
  return node;
}

void NodeTable::Erase(std::string_view node_id) {
  auto it = nodes_.find(node_id);
  if (it == nodes_.end()) return;
  BindConn(it->second, 0);
  nodes_.erase(it);
}

void NodeTable::BindConn(RunNode& node, ConnId conn) {
  if (node.conn == conn) return;
  if (node.conn != 0) {
    // Only if it is still this node's: a client that joined a second node id
    // on the same connection has rebound it.
    auto it = conn_node_.find(node.conn);
    if (it != conn_node_.end() && it->second == node.node_id) conn_node_.erase(it);
  }
  node.conn = conn;
  if (conn != 0) conn_node_[conn] = node.node_id;
}

void NodeTable::Connected(RunNode& node, ConnId conn, Time now) {
  BindConn(node, conn);
  node.disconnected_at.reset();
  node.last_seen = now;
  NoteDeadline(node);
}

void NodeTable::Disconnected(RunNode& node, Time now) {
  BindConn(node, 0);
  node.disconnected_at = now;
  NoteDeadline(node);
}

size_t NodeTable::member_count() const {
  return static_cast<size_t>(std::count_if(nodes_.begin(), nodes_.end(),
                                           [](const auto& entry) { return entry.second.member; }));
}

void NodeTable::ClearMembership() {
  for (auto& [id, node] : nodes_) {
    node.member = false;
    node.group_rank = -1;
  }
}

void NodeTable::NoteDeadline(const RunNode& node) {
  next_check_ = std::min(next_check_, DeadlineOf(node));
}

Time NodeTable::DeadlineOf(const RunNode& node) const {
  if (node.conn == 0 && node.disconnected_at) return *node.disconnected_at + disconnect_grace_;
  return node.last_seen + heartbeat_timeout_ + Duration(1);
}

std::vector<NodeTable::DeadNode> NodeTable::FindDead(Time now) {
  std::vector<DeadNode> dead;
  if (now < next_check_) return dead;
  next_check_ = Time::max();
  for (auto& [id, node] : nodes_) {
    if (node.conn == 0 && node.disconnected_at &&
        now - *node.disconnected_at >= disconnect_grace_) {
      dead.push_back(DeadNode{id, "disconnected", 0});
    } else if (now - node.last_seen > heartbeat_timeout_) {
      // Silent (stopped, or its link is down): its half-open socket must go too.
      dead.push_back(DeadNode{id, "silent", node.conn});
      BindConn(node, 0);
    } else {
      next_check_ = std::min(next_check_, DeadlineOf(node));
    }
  }
  return dead;
}

void NodeTable::ForgiveStall(Time now) {
  for (auto& [id, node] : nodes_) {
    if (node.conn != 0) node.last_seen = std::max(node.last_seen, now);
  }
}

}  // namespace muster::rdzv
