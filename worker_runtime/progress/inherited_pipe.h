// InheritedPipe: a pipe muster handed to a worker, named by an environment
// variable (MUSTER_PROGRESS_FD, MUSTER_CONTROL_FD).
//
// Contract: returns the descriptor the variable names, made non-blocking,
// when it is a pipe or FIFO; -1 when the variable is unset, not a number or
// names something else, so a stale variable cannot make the worker read or
// write an unrelated file. The descriptor stays the process's (not owned).
//
// Thread-safety: reads only through `env`.
#pragma once

#include "common/env_lookup.h"

namespace muster::runtime {

int InheritedPipe(const EnvLookup& env, const char* name);

}  // namespace muster::runtime
