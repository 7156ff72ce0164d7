#include "launcher/process/close_on_exec.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

namespace muster {
namespace {

constexpr unsigned kCloseRangeCloexec = 1U << 2;  // CLOSE_RANGE_CLOEXEC, Linux 5.11

void MarkOne(int fd) {
  const int flags = fcntl(fd, F_GETFD);
  if (flags >= 0 && (flags & FD_CLOEXEC) == 0) fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

// The kernel's struct linux_dirent64, as getdents64 writes it.
struct DirEntry {
  uint64_t inode;
  int64_t offset;
  unsigned short length;
  unsigned char type;
  char name[1];
};

// Walks /proc/self/fd with getdents64 (opendir allocates: not safe after
// fork). False when /proc cannot be read.
bool MarkListed(int first) {
  const int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return false;
  alignas(DirEntry) char buffer[1024];
  for (;;) {
    const long n = syscall(SYS_getdents64, dir, buffer, sizeof buffer);
    if (n < 0) {
      close(dir);
      return false;
    }
    if (n == 0) break;
    for (long at = 0; at < n;) {
      const auto* entry = reinterpret_cast<const DirEntry*>(buffer + at);
      at += entry->length;
      int fd = 0;
      const char* c = entry->name;
      if (*c < '0' || *c > '9') continue;  // "." and ".."
      for (; *c >= '0' && *c <= '9'; ++c) fd = fd * 10 + (*c - '0');
      if (fd >= first && fd != dir) MarkOne(fd);
    }
  }
  close(dir);
  return true;
}

}  // namespace

void MarkCloseOnExecOneByOne(int first, bool use_proc) {
  if (use_proc && MarkListed(first)) return;
  rlimit limit{};
  rlim_t end = 65536;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    end = limit.rlim_cur;
  }
  // Descriptors at or past the soft limit cannot be open unless it was
  // lowered after they were: bounded, like any walk, by what we can know.
  for (rlim_t fd = static_cast<rlim_t>(first); fd < end; ++fd) MarkOne(static_cast<int>(fd));
}

void MarkCloseOnExecFrom(int first) {
  if (syscall(SYS_close_range, static_cast<unsigned>(first), ~0U, kCloseRangeCloexec) == 0) return;
  MarkCloseOnExecOneByOne(first);
}

}  // namespace muster
