#include "worker_runtime/progress/inherited_pipe.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "common/decimal.h"

namespace muster::runtime {

int InheritedPipe(const EnvLookup& env, const char* name) {
  const auto text = env(name);
  if (!text) return -1;
  const auto fd = ParseDecimal(*text, 1 << 20);
  if (!fd) return -1;
  struct stat info {};
  if (fstat(static_cast<int>(*fd), &info) != 0 || !S_ISFIFO(info.st_mode)) return -1;
  const int flags = fcntl(static_cast<int>(*fd), F_GETFL);
  if (flags < 0 || fcntl(static_cast<int>(*fd), F_SETFL, flags | O_NONBLOCK) != 0) return -1;
  return static_cast<int>(*fd);
}

}  // namespace muster::runtime
