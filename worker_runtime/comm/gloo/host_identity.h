// HostIdentity: a string equal for two processes exactly when they can share
// memory and see each other's PIDs: the same running kernel (boot id), PID
// namespace, mount namespace (so the same /dev/shm) and effective user.
// SharedMemoryAllreduce compares it across ranks.
//
// Thread-safety: reads /proc; safe to call from any thread.
#pragma once

#include <string>

namespace muster::runtime {

// "boot=<id> pidns=<inode> mntns=<inode> uid=<uid>", or "" when any part
// cannot be read (then it matches nothing: the caller treats "" as unknown).
std::string HostIdentity();

}  // namespace muster::runtime
