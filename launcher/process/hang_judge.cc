#include "launcher/process/hang_judge.h"

#include <algorithm>
#include <cmath>

namespace muster {

using std::chrono::milliseconds;

void StepTimeLearner::OnStep(Time now) {
  if (last_) {
    const double interval = std::chrono::duration<double, std::milli>(now - *last_).count();
    // The first interval seeds the average; later ones move it.
    typical_ms_ = intervals_ == 0 ? interval : typical_ms_ + kSmoothing * (interval - typical_ms_);
    longest_ms_ = std::max(longest_ms_, interval);
    ++intervals_;
  }
  last_ = now;
}

milliseconds StepTimeLearner::Timeout(const AutoHangRule& rule) const {
  const double learned =
      std::max(rule.step_multiple * typical_ms_, rule.longest_multiple * longest_ms_);
  return std::max(rule.floor, milliseconds(static_cast<int64_t>(std::ceil(learned))));
}

namespace {

std::string Where(const std::vector<StackFrame>& frames) {
  const StackFrame* frame = InnermostScriptFrame(frames);
  return frame ? DescribeFrame(*frame) : std::string("no Python frame");
}

}  // namespace

HangVerdict JudgeHang(const std::vector<RankEvidence>& ranks) {
  HangVerdict verdict;
  // Groups of ranks that answered, by their main thread's frames.
  std::vector<std::pair<const std::vector<StackFrame>*, int>> groups;
  for (const RankEvidence& rank : ranks) {
    if (!rank.dumps_stacks || rank.second.empty()) continue;
    const auto& frames = rank.second.MainFrames();
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& group) { return *group.first == frames; });
    if (it == groups.end()) {
      groups.emplace_back(&frames, 1);
    } else {
      ++it->second;
    }
  }
  const std::vector<StackFrame>* majority = nullptr;
  int largest = 0;
  bool tie = false;
  for (const auto& [frames, count] : groups) {
    if (count > largest) {
      largest = count;
      majority = frames;
      tie = false;
    } else if (count == largest) {
      tie = true;
    }
  }
  if (tie) majority = nullptr;
  // One place for every rank that answered, and every rank answered: the
  // cause is not among these ranks.
  const bool one_place =
      groups.size() == 1 && std::all_of(ranks.begin(), ranks.end(), [](const RankEvidence& r) {
        return !r.dumps_stacks || !r.second.empty();
      });
  bool changed = false;
  bool culprit_active = false;
  bool any_io = false;
  bool unplaced_active = false;  // a rank that dumps no stacks worked
  for (const RankEvidence& rank : ranks) {
    if (!rank.first.empty() && !rank.second.empty() &&
        rank.first.MainFrames() != rank.second.MainFrames()) {
      changed = true;
    }
    any_io = any_io || rank.did_io;
    if (!rank.dumps_stacks) {
      unplaced_active = unplaced_active || rank.used_cpu || rank.did_io;
      continue;
    }
    if (one_place) continue;
    const bool culprit =
        rank.second.empty() || (majority != nullptr && rank.second.MainFrames() != *majority);
    if (!culprit) continue;
    verdict.culprits.push_back(rank.global_rank);
    if (verdict.culprit_frames.empty() && !rank.second.empty()) {
      const auto& frames = rank.second.MainFrames();
      verdict.culprit_frames.assign(
          frames.begin(), frames.begin() + static_cast<std::ptrdiff_t>(std::min(
                                               frames.size(), HangVerdict::kCulpritFrames)));
    }
    culprit_active = culprit_active || rank.used_cpu || rank.did_io;
  }
  if (majority) verdict.waiting_at = *majority;
  verdict.alive =
      changed || culprit_active || unplaced_active || (verdict.culprits.empty() && any_io);

  std::string summary;
  if (verdict.alive) {
    summary = changed           ? "a rank's stack moved between two dumps a second apart"
              : culprit_active  ? "the rank(s) the others wait for used CPU or did I/O"
              : unplaced_active ? "a rank that dumps no stacks used CPU or did I/O"
                                : "a rank did I/O";
  } else if (!verdict.culprits.empty()) {
    summary = "not where the others wait:";
    for (const RankEvidence& rank : ranks) {
      if (std::find(verdict.culprits.begin(), verdict.culprits.end(), rank.global_rank) ==
          verdict.culprits.end()) {
        continue;
      }
      summary += " rank " + std::to_string(rank.global_rank) + " at " +
                 (rank.second.empty() ? std::string("(no stack: stopped or blocked in the kernel)")
                                      : Where(rank.second.MainFrames())) +
                 ";";
    }
    if (majority) summary += " the others at " + Where(*majority);
  } else if (majority) {
    summary =
        "every rank waits at " + Where(*majority) + ": the cause is not among this node's ranks";
  } else if (!groups.empty()) {
    summary = "the ranks stand at " + std::to_string(groups.size()) +
              " places, none where most wait: no culprit named";
  } else {
    summary = "no rank gave a stack, and none used CPU or did I/O";
  }
  verdict.summary = std::move(summary);
  return verdict;
}

}  // namespace muster
