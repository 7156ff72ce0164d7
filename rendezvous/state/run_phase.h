// RunPhase: where one run's rendezvous stands. run_state.h documents the
// transitions between phases; status shows each by its name.
#pragma once

#include <string_view>

namespace muster::rdzv {

enum class RunPhase {
  kGathering,   // waiting for --nnodes MIN nodes
  kLastCall,    // MIN joined; late nodes may still join, up to MAX
  kRunning,     // a generation runs (and may be draining towards the next)
  kRebuilding,  // a restarted daemon waits for the members of the generation agents report
  kEnded,       // succeeded or failed; kept a while for status, then forgotten
};

// "gathering", "last_call", "running", "rebuilding", "ended". Static storage.
std::string_view RunPhaseName(RunPhase phase);

}  // namespace muster::rdzv
