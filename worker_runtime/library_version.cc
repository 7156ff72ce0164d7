#include "worker_runtime/library_version.h"

#include "common/version.h"

namespace muster::runtime {

// Compiled into the library, so it reports the library's version and not the
// caller's headers'.
const char* LibraryVersion() { return kVersion; }

}  // namespace muster::runtime
