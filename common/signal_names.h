// Signal names as muster prints and reads them: "SIGKILL" for 9.
//
// Thread-safety: pure functions.
#pragma once

#include <string>

namespace muster {

// "SIGSEGV" for 11; "SIG<n>" for numbers without a name.
std::string SignalName(int sig);

// 11 for "SIGSEGV"; 0 for a name SignalName() does not produce.
int SignalNumber(const std::string& name);

}  // namespace muster
