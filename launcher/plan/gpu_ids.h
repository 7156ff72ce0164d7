// GPU id resolution: which GPUs this node's workers may use, and where that
// list came from. Pure except for DiscoverNvidiaGpus(), which reads /proc and
// /dev (no CUDA library is loaded, so a node without GPUs or drivers is a
// normal case, not an error).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/env_lookup.h"

namespace muster {

struct GpuIds {
  std::vector<std::string> ids;  // in the order workers receive them
  std::string source;            // "--gpus", "CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS",
                                 // "SLURM_JOB_GPUS", "discovered" or "none"
};

// Splits "0,1, 2" into {"0","1","2"}; empty items are dropped.
std::vector<std::string> SplitGpuList(const std::string& list);

// Order of precedence: the --gpus flag, the inherited CUDA_VISIBLE_DEVICES
// (an empty value means "no GPU", as CUDA reads it), SLURM_STEP_GPUS,
// SLURM_JOB_GPUS, then `discover` (called only if nothing else applies).
GpuIds ResolveGpuIds(const std::optional<std::vector<std::string>>& flag, const EnvLookup& env,
                     const std::function<std::vector<std::string>()>& discover);

// NVIDIA GPUs present on this machine as CUDA ordinals "0".."N-1", counted from
// /proc/driver/nvidia/gpus (one entry per GPU) or, failing that, /dev/nvidiaN
// device nodes. Returns {} when there is no driver.
std::vector<std::string> DiscoverNvidiaGpus();

}  // namespace muster
