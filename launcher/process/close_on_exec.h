// Marking a child's inherited descriptors close-on-exec between fork and
// exec, on every kernel.
//
// close_range(CLOSE_RANGE_CLOEXEC) does it in one call from Linux 5.11 on.
// Older kernels (RHEL 8's 4.18) answer ENOSYS or EINVAL, and a child that
// went on would hand the agent's sockets (the store's listener, the
// rendezvous connection) to the workers it runs: then each descriptor is
// marked by itself: those /proc/self/fd lists or, without /proc, every
// number below the soft RLIMIT_NOFILE.
//
// Async-signal-safe: only system calls and a buffer on the stack (about
// 1 KiB), no allocation; safe in a child of fork() or clone(CLONE_VM).
#pragma once

namespace muster {

// Marks every open descriptor >= `first` close-on-exec: close_range when
// the kernel has it, else MarkCloseOnExecOneByOne.
void MarkCloseOnExecFrom(int first);

// The fallback on its own: marks every open descriptor >= `first`
// close-on-exec with fcntl, walking /proc/self/fd (`use_proc` false: every
// number below the soft RLIMIT_NOFILE, as when /proc is not mounted).
void MarkCloseOnExecOneByOne(int first, bool use_proc = true);

}  // namespace muster
