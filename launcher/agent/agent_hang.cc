// The agent's side of hang detection: when its worker group suspects a hang,
// the evidence is gathered (hang_evidence.h) and the verdict handed back.
#include <spdlog/spdlog.h>

#include <chrono>

#include "launcher/agent/agent.h"

namespace muster {

void Agent::GatherHangEvidence() {
  const auto suspect = group_->hang_evidence_wanted();
  spdlog::info("event=hang_suspect local_rank={} gathering=stacks,activity",
               WorkerGroup::LocalRankOf(*suspect));
  // One file per verdict of hung: the wall-clock milliseconds tell two
  // apart within one attempt.
  const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const std::string report_path =
      run_dir_.AttemptDir(attempt()) + "/hang-" + std::to_string(millis) + ".txt";
  WorkerGroup* group = group_.get();
  hang_evidence_.Gather(group->HangSubjects(), report_path,
                        [this, group](const HangVerdict& verdict, const std::string& written) {
                          if (group != group_.get()) return;  // replaced meanwhile
                          if (verdict.alive && options_.hang_auto) {
                            spdlog::info("event=hang_suspect_cleared why=\"{}\"", verdict.summary);
                          } else {
                            spdlog::warn("event=hang verdict=\"{}\" stacks={}", verdict.summary,
                                         written.empty() ? "none" : written);
                          }
                          group_->OnHangEvidence(verdict, written, Clock::now(),
                                                 std::chrono::system_clock::now());
                          AfterGroupEvent();
                        });
}

}  // namespace muster
