#include "rendezvous/state/run_phase.h"

namespace muster::rdzv {

std::string_view RunPhaseName(RunPhase phase) {
  switch (phase) {
    case RunPhase::kGathering:
      return "gathering";
    case RunPhase::kLastCall:
      return "last_call";
    case RunPhase::kRunning:
      return "running";
    case RunPhase::kRebuilding:
      return "rebuilding";
    case RunPhase::kEnded:
      return "ended";
  }
  return "unknown";
}

}  // namespace muster::rdzv
