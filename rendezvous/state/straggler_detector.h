// StragglerDetector: which member nodes train markedly slower than the run,
// as a pure decider. Evaluate() takes every member of the current generation
// with its step rate (step_rates.h) and the time; it returns what changed.
//
// The rule, judged at each Evaluate():
//   - Only nodes with a known rate are judged, and only when at least
//     kMinReporting (3) members have one: with two, neither can be told
//     slower than "the run". The median is over those nodes.
//   - A judged node whose rate is below `fraction` x median is "below"; one
//     at or above it is not (equal rates never flag: a median of 0 flags
//     nobody).
//   - A node below for `window` without a break (from the first Evaluate
//     that found it below) is flagged: one kFlagged change.
//   - A flagged node that is no longer below, whose rate became unknown, or
//     that can no longer be judged (fewer than kMinReporting report) is
//     cleared: one kCleared change. Its window starts again when it falls
//     below again.
//   - A node missing from `members` (dead, or not in this generation) is
//     forgotten without a change: its end was logged as such.
// Detection only: the caller logs the changes and shows the flags.
//
// A limit of the rule, by design of synchronous training: in data-parallel
// training every rank waits for the slowest at each all-reduce, so every
// node's step rate comes out equal and a slow node slows the whole run
// rather than falling behind. The rule finds nodes that fall behind when
// nodes progress independently, and a node whose workers stop reporting
// while others go on (its rate falls to 0).
//
// Cost: O(n) per Evaluate for n members (a median by selection), and an
// entry kept only for nodes below or flagged. Pure; not thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/clock.h"

namespace muster::rdzv {

struct StragglerRule {
  double fraction = 0.5;                     // Settings::straggler_fraction
  std::chrono::milliseconds window{30'000};  // Settings::straggler_window
};

// One member as Evaluate() sees it. The views must outlive the call only.
struct MemberRate {
  std::string_view node_id;
  std::string_view host;
  std::optional<double> rate;  // steps per second; nullopt: not known
};

struct StragglerChange {
  enum class Kind { kFlagged, kCleared };
  Kind kind = Kind::kFlagged;
  std::string node_id;
  std::string host;
  std::optional<double> rate;    // at the change; nullopt when it became unknown
  std::optional<double> median;  // of the judged nodes; nullopt when too few report
};

class StragglerDetector {
 public:
  static constexpr size_t kMinReporting = 3;

  explicit StragglerDetector(StragglerRule rule) : rule_(rule) {}

  // Judges `members` at `now`; returns the flags raised and cleared, in
  // the order of `members`.
  std::vector<StragglerChange> Evaluate(const std::vector<MemberRate>& members, Time now);

  // As of the last Evaluate().
  bool IsStraggler(std::string_view node_id) const;
  size_t straggler_count() const { return flagged_; }
  // The median over the members with a known rate; nullopt when none has one.
  std::optional<double> median() const { return median_; }

 private:
  struct Watch {
    Time below_since{};
    bool flagged = false;
    uint64_t seen = 0;  // the Evaluate() that last saw it among the members
  };
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };

  StragglerRule rule_;
  // Nodes found below, flagged or not; the rest have no entry.
  std::unordered_map<std::string, Watch, StringHash, std::equal_to<>> watched_;
  uint64_t evaluation_ = 0;
  size_t flagged_ = 0;
  std::optional<double> median_;
  std::vector<double> rates_;  // reused: the known rates, for the median
};

}  // namespace muster::rdzv
