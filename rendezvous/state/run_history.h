// RunHistory and EventLog: what the rendezvous remembers of the past for the
// operator's view (the status page), bounded so that a long job, or one of
// 10,000 nodes that churns, never grows the daemon's memory:
//
//   - per run, the last kGenerationsKept generations: number, when it
//     formed, its size, and why (GenerationCause);
//   - per run, the last kDepartedKept nodes that left it: dead (connection
//     lost, heartbeat timeout) or left, with when, why and the ranks they
//     held; a node that joins again under its id is no longer listed;
//   - per daemon, the last kEventsKept events (faults, new generations,
//     drains that timed out, runs ended, changes of lead).
//
// Times are the `now` the core was given (steady clock); the status
// snapshot turns them into ages. Pure values, no clock read. Not thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"

namespace muster::rdzv {

// A deque that keeps only its last `capacity` entries: Add() drops the
// oldest one when full. REQUIRES: capacity >= 1.
template <typename T>
class BoundedLog {
 public:
  explicit BoundedLog(size_t capacity) : capacity_(capacity) {}
  void Add(T entry) {
    if (entries_.size() >= capacity_) entries_.pop_front();
    entries_.push_back(std::move(entry));
  }
  // Removes every entry for which `drop(entry)` holds.
  template <typename Pred>
  void EraseIf(Pred drop) {
    std::erase_if(entries_, drop);
  }
  size_t size() const { return entries_.size(); }
  size_t capacity() const { return capacity_; }
  bool empty() const { return entries_.empty(); }
  // Oldest first.
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }
  const T& back() const { return entries_.back(); }
  T& back() { return entries_.back(); }

 private:
  size_t capacity_;
  std::deque<T> entries_;
};

// Why a generation formed. `reason` is one of the kReason* names; `node_id`
// names the node it concerns (empty when none does); `detail` is the text
// the daemon logs ("heartbeat timeout", "exit code 3").
struct GenerationCause {
  static constexpr std::string_view kJoined = "joined";  // a first round, or one after waiting
  static constexpr std::string_view kNodeLost = "node lost";
  static constexpr std::string_view kNodeLeft = "left";
  static constexpr std::string_view kWorkerFailed = "worker failed";
  static constexpr std::string_view kAdmitted = "admitted";  // newcomers joined a running job
  static constexpr std::string_view kDaemonRestart = "daemon restart";  // rebuilt from agents
  std::string reason;
  std::string node_id;
  std::string detail;
};

struct GenerationRecord {
  uint64_t generation = 0;
  Time formed{};
  int nodes = 0;
  int world_size = 0;
  GenerationCause cause;
  // How long training stood still before this generation's members all
  // stepped: from the last step of the generation before (or the run's
  // start) until then (GoodputMeter::OnNodeStep). Unset until they all step.
  std::optional<std::chrono::milliseconds> stood_still;
};

// A node that is no longer part of the run.
struct DepartedNode {
  std::string node_id;
  std::string host;
  std::string state;  // "dead" or "left"
  std::string why;    // "connection lost", "heartbeat timeout", "left"
  Time at{};
  Time last_seen{};         // when it was last heard
  uint64_t generation = 0;  // the run's generation when it went
  bool was_member = false;  // its ranks below are those it held then
  int group_rank = -1;
  int global_rank_offset = 0;
  int local_world_size = 1;
};

// Something an operator should see, kept by the daemon across runs.
struct DaemonEvent {
  Time at{};
  std::string kind;  // "node_dead", "node_left", "worker_failed", "generation", ...
  std::string run_id;
  std::string node_id;  // empty when it concerns no one node
  std::string text;
};

struct RunHistory {
  static constexpr size_t kGenerationsKept = 64;
  static constexpr size_t kDepartedKept = 256;
  BoundedLog<GenerationRecord> generations{kGenerationsKept};
  BoundedLog<DepartedNode> departed{kDepartedKept};

  // `node_id` is back (it joined again): it is no longer departed.
  void Returned(std::string_view node_id) {
    departed.EraseIf([node_id](const DepartedNode& d) { return d.node_id == node_id; });
  }
};

class EventLog {
 public:
  static constexpr size_t kEventsKept = 200;
  void Add(DaemonEvent event) { events_.Add(std::move(event)); }
  const BoundedLog<DaemonEvent>& events() const { return events_; }

 private:
  BoundedLog<DaemonEvent> events_{kEventsKept};
};

}  // namespace muster::rdzv
