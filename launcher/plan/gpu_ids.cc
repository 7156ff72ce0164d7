#include "launcher/plan/gpu_ids.h"

#include <cctype>
#include <filesystem>
#include <system_error>

namespace muster {

std::vector<std::string> SplitGpuList(const std::string& list) {
  std::vector<std::string> ids;
  std::string current;
  auto flush = [&] {
    if (!current.empty()) ids.push_back(current);
    current.clear();
  };
  for (char c : list) {
    if (c == ',') {
      flush();
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      current.push_back(c);
    }
  }
  flush();
  return ids;
}

GpuIds ResolveGpuIds(const std::optional<std::vector<std::string>>& flag, const EnvLookup& env,
                     const std::function<std::vector<std::string>()>& discover) {
  if (flag) return {*flag, "--gpus"};
  // CUDA_VISIBLE_DEVICES is honoured even when empty: the user hid every GPU.
  if (auto cvd = env("CUDA_VISIBLE_DEVICES")) return {SplitGpuList(*cvd), "CUDA_VISIBLE_DEVICES"};
  for (const char* name : {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS"}) {
    if (auto value = env(name); value && !SplitGpuList(*value).empty()) {
      return {SplitGpuList(*value), name};
    }
  }
  auto found = discover();
  if (found.empty()) return {{}, "none"};
  return {found, "discovered"};
}

std::vector<std::string> DiscoverNvidiaGpus() {
  namespace fs = std::filesystem;
  std::error_code ec;
  size_t count = 0;
  // The driver lists one directory per GPU, named by PCI bus id.
  for (fs::directory_iterator it("/proc/driver/nvidia/gpus", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++count;
  }
  if (count == 0) {
    // Containers often expose device nodes without /proc/driver/nvidia.
    for (fs::directory_iterator it("/dev", ec), end; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.size() > 6 && name.rfind("nvidia", 0) == 0 &&
          name.find_first_not_of("0123456789", 6) == std::string::npos) {
        ++count;
      }
    }
  }
  std::vector<std::string> ids;
  for (size_t i = 0; i < count; ++i) ids.push_back(std::to_string(i));
  return ids;
}

}  // namespace muster
