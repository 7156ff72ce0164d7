// The hang rule of `--hang-timeout auto` (the default), as pure objects:
//
// StepTimeLearner: when a worker that reports steps is silent long enough
// to be suspected. It learns from the times of the worker's step reports:
//   timeout = max(floor, step_multiple x typical, longest_multiple x longest)
// where `typical` is a moving average of the intervals between reports and
// `longest` the longest interval seen. Until the first report a worker is
// not watched at all: a first step that compiles, or a script that reports
// nothing, is never suspected. With the defaults (20 s, 20x, 2x): 100 ms
// steps give 20 s; 2 s steps give 40 s; once a 15 s step that every rank
// took together (a checkpoint save) has passed, 30 s. docs/usage.md argues
// the numbers.
//
// JudgeHang: what the evidence gathered on suspicion says. The evidence is
// each local rank's main-thread stack (faulthandler, stack_dump.h) taken
// twice a second apart, and whether its process used CPU or did I/O in
// between (/proc). The rule:
//   - where: ranks are grouped by their main thread's frames in the second
//     dump. The largest group, when it is the only largest, is "where the
//     others wait"; every rank outside it, and every rank that answered no
//     dump, is a culprit. When every rank that answered is at one place,
//     none is named (the cause is elsewhere: another node, the network);
//     nor when no place is the largest (two ranks at two places): only a
//     rank that answered no dump is named then.
//   - alive: some rank's main-thread frames changed between the dumps, or
//     some culprit used CPU or did I/O (a rank saving a checkpoint while
//     the others wait for it at a barrier), or, with no culprit named, some
//     rank did I/O, or a rank that dumps no stacks used CPU or did I/O.
//     Then the job is working, not hung.
//   - hung otherwise.
// A rank spinning in a driver call uses CPU and is taken as alive: such a
// hang is left to NCCL's own watchdog.
//
// Pure; not thread-safe.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "launcher/process/stack_dump.h"

namespace muster {

struct AutoHangRule {
  std::chrono::milliseconds floor{20'000};
  double step_multiple = 20;
  double longest_multiple = 2;
};

class StepTimeLearner {
 public:
  static constexpr double kSmoothing = 0.1;  // a new interval's weight in the average

  // A step report at `now`.
  void OnStep(Time now);
  // Training was interrupted (a pause for a recovery in place): the time
  // until the next step is the recovery's, not a step's, and is not
  // learned. What was learned stays.
  void Interrupt() { last_.reset(); }
  // The silence after which the worker is suspected; meaningful once it
  // reported a step (before, it is not watched).
  std::chrono::milliseconds Timeout(const AutoHangRule& rule) const;
  // How many intervals were learned (0 until the second report).
  int intervals() const { return intervals_; }
  double typical_ms() const { return typical_ms_; }
  double longest_ms() const { return longest_ms_; }

 private:
  std::optional<Time> last_;
  int intervals_ = 0;
  double typical_ms_ = 0;
  double longest_ms_ = 0;
};

// What was gathered about one local rank.
struct RankEvidence {
  int global_rank = 0;
  // It said it dumps its stacks (a warm-started Python worker); the others
  // (muster-train, a cold worker) are judged by their activity alone.
  bool dumps_stacks = false;
  // faulthandler's two dumps; empty when the rank answered none (it does
  // not dump stacks, or it is stopped or blocked in the kernel).
  StackDump first;
  StackDump second;
  // Its process used CPU time, or read or wrote bytes, between the two.
  bool used_cpu = false;
  bool did_io = false;
};

struct HangVerdict {
  bool alive = false;
  std::vector<int> culprits;  // global ranks, in the evidence's order
  // The frames most ranks wait at (empty when no dump came or none is
  // the largest group).
  std::vector<StackFrame> waiting_at;
  // One line: who is where, and why it is alive or hung.
  std::string summary;
  // The first culprit's main-thread frames, innermost first, at most
  // kCulpritFrames (empty when no culprit gave a dump).
  std::vector<StackFrame> culprit_frames = {};
  static constexpr size_t kCulpritFrames = 5;
};

HangVerdict JudgeHang(const std::vector<RankEvidence>& ranks);

}  // namespace muster
