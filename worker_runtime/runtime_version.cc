#include "worker_runtime/runtime_version.h"

namespace muster::runtime {

const char* RuntimeVersion() { return "0.1.0"; }

}  // namespace muster::runtime
