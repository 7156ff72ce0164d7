#include "worker_runtime/comm/gloo/host_identity.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

namespace muster::runtime {
namespace {

// A namespace's inode number; 0 when /proc does not show it.
ino_t NamespaceInode(const char* path) {
  struct stat st {};
  return stat(path, &st) == 0 ? st.st_ino : 0;
}

}  // namespace

std::string HostIdentity() {
  std::string boot_id;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot_id;
  const ino_t pid_ns = NamespaceInode("/proc/self/ns/pid");
  const ino_t mnt_ns = NamespaceInode("/proc/self/ns/mnt");
  const ino_t net_ns = NamespaceInode("/proc/self/ns/net");
  if (boot_id.empty() || pid_ns == 0 || mnt_ns == 0 || net_ns == 0) return "";
  return "boot=" + boot_id + " pidns=" + std::to_string(pid_ns) +
         " mntns=" + std::to_string(mnt_ns) + " netns=" + std::to_string(net_ns) +
         " uid=" + std::to_string(geteuid());
}

}  // namespace muster::runtime
