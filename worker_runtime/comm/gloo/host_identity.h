// HostIdentity: a string equal for two processes when they can share memory
// and see each other's PIDs: the same running kernel (boot id), PID
// namespace, mount namespace (so the same /dev/shm) and effective user. The
// network namespace is part of it too: processes in different ones are
// treated as different hosts (as tests and failure rehearsals use them), so
// their traffic stays on the network they were given.
// SharedMemoryAllreduce compares it across ranks.
//
// Thread-safety: reads /proc; safe to call from any thread.
#pragma once

#include <string>

namespace muster::runtime {

// "boot=<id> pidns=<inode> mntns=<inode> netns=<inode> uid=<uid>", or "" when any part
// cannot be read (then it matches nothing: the caller treats "" as unknown).
std::string HostIdentity();

}  // namespace muster::runtime
