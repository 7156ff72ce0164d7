// What the WorkerGroup tests share: `n` workers' specs (local ranks 0..n-1,
// global ranks 10..), and the fake clocks' zero.
#pragma once

#include <vector>

#include "launcher/process/worker_group.h"

namespace muster::testing {

inline const Time t0{};
inline const WallTime w0{};

inline std::vector<WorkerSpec> Specs(int n) {
  std::vector<WorkerSpec> specs;
  for (int i = 0; i < n; ++i) {
    WorkerSpec s;
    s.local_rank = i;
    s.global_rank = 10 + i;
    s.request.executable = "/bin/worker";
    specs.push_back(s);
  }
  return specs;
}

// OnTick, and when the group then wants evidence of a hang, a verdict that
// finds nothing alive and names no culprit (the agent's part: hang_judge.h):
// the silent worker is then hung by the timeout's rule.
inline void TickJudged(WorkerGroup& group, Time now, WallTime wall = WallTime{}) {
  group.OnTick(now, wall);
  if (group.hang_evidence_wanted()) group.OnHangEvidence(HangVerdict{}, "", now, wall);
}

}  // namespace muster::testing
