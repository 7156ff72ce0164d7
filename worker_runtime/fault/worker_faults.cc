#include "worker_runtime/fault/worker_faults.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/decimal.h"

namespace muster::runtime {
namespace {

void Announce(const FaultSpec& spec, uint64_t step, const ProgressReporter& progress) {
  progress.ReportInjected(spec.index);
  std::fprintf(stderr, "muster-train: injected fault %d \"%s\" at step %llu\n", spec.index,
               spec.text.c_str(), static_cast<unsigned long long>(step));
  std::fflush(stderr);
}

}  // namespace

Result<WorkerFaults> WorkerFaults::FromEnv(const EnvLookup& env, int rank, int world_size) {
  WorkerFaults faults;
  auto resolved = ResolveFaultPlan("", "", std::nullopt, env);
  if (!resolved.ok()) return resolved.status();
  if (!*resolved) return faults;
  FaultPlan& plan = **resolved;

  std::vector<bool> fired(plan.faults.size(), false);
  if (const auto list = env(kInjectFiredEnv); list && !list->empty()) {
    std::string_view rest = *list;
    for (;;) {
      const auto comma = rest.find(',');
      const auto index = ParseDecimal(rest.substr(0, comma), fired.size() - 1);
      if (!index) {
        return Status::InvalidArgument(std::string(kInjectFiredEnv) + ": '" + *list +
                                       "' is not a list of fault indices below " +
                                       std::to_string(fired.size()));
      }
      fired[*index] = true;
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  for (FaultSpec& spec : plan.faults) {
    if (fired[static_cast<size_t>(spec.index)]) continue;
    const bool mine = (spec.kind == FaultKind::kExitWorker && spec.RankAmong(world_size) == rank) ||
                      (spec.kind == FaultKind::kCorruptCheckpoint && rank == 0);
    if (mine) faults.pending_.push_back(std::move(spec));
  }
  return faults;
}

Result<WorkerFaults> WorkerFaults::FromProcessEnv(int rank, int world_size) {
  return FromEnv(SystemEnv(), rank, world_size);
}

void WorkerFaults::AtStep(uint64_t step, const ProgressReporter& progress) {
  for (const FaultSpec& spec : pending_) {
    if (spec.kind != FaultKind::kExitWorker || step < *spec.step) continue;
    Announce(spec, step, progress);
    std::fflush(stdout);
    std::_Exit(spec.exit_code);
  }
}

bool WorkerFaults::CorruptsCheckpointAt(uint64_t step, const ProgressReporter& progress) {
  for (auto it = pending_.begin(); it != pending_.end(); ++it) {
    if (it->kind != FaultKind::kCorruptCheckpoint || step < *it->step) continue;
    Announce(*it, step, progress);
    pending_.erase(it);
    return true;
  }
  return false;
}

Status DamageFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return Status::IoError("cannot open '" + path + "': " + std::strerror(errno));
  const off_t size = ::lseek(fd, 0, SEEK_END);
  unsigned char byte = 0;
  const off_t middle = size / 2;
  bool ok = size > 0 && ::pread(fd, &byte, 1, middle) == 1;
  byte ^= 0x5a;
  ok = ok && ::pwrite(fd, &byte, 1, middle) == 1 && ::fsync(fd) == 0;
  const int error = errno;
  ::close(fd);
  if (!ok) return Status::IoError("cannot damage '" + path + "': " + std::strerror(error));
  return Status::Ok();
}

}  // namespace muster::runtime
