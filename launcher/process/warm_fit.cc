#include "launcher/process/warm_fit.h"

#include <array>
#include <map>

namespace muster {
namespace {

constexpr std::array<std::string_view, 12> kImportTimePrefixes = {
    "PYTHON", "LD_",       "LC_",    "OMP_",     "GOMP_",   "KMP_",
    "MKL_",   "OPENBLAS_", "TORCH_", "PYTORCH_", "MALLOC_", "GLIBC_TUNABLES"};

std::map<std::string_view, std::string_view> Index(const std::vector<std::string>& env) {
  std::map<std::string_view, std::string_view> index;
  for (const auto& entry : env) {
    const std::string_view view = entry;
    const auto eq = view.find('=');
    if (eq == std::string_view::npos) continue;
    const std::string_view name = view.substr(0, eq);
    if (ReadAtImport(name)) index.emplace(name, view.substr(eq + 1));
  }
  return index;
}

std::string Shown(const std::optional<std::string_view>& value) {
  if (!value) return "unset";
  // Appended, not `"'" + std::string(...)`: GCC 12 at -O3 warns (-Wrestrict)
  // on that operator+ overload.
  std::string shown;
  shown.reserve(value->size() + 2);
  shown.push_back('\'');
  shown.append(*value);
  shown.push_back('\'');
  return shown;
}

}  // namespace

bool ReadAtImport(std::string_view name) {
  if (name == "LANG") return true;
  // Read when an NCCL process group is made, after the script started
  // (muster sets it per run: launcher/agent/flight_recorder.h).
  if (name == "TORCH_NCCL_DEBUG_INFO_PIPE_FILE") return false;
  for (const std::string_view prefix : kImportTimePrefixes) {
    if (name.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

std::optional<std::string> WarmEnvironmentMismatch(const std::vector<std::string>& warm,
                                                   const std::vector<std::string>& worker) {
  const auto warm_index = Index(warm);
  const auto worker_index = Index(worker);
  auto lookup = [](const auto& index, std::string_view name) -> std::optional<std::string_view> {
    auto it = index.find(name);
    if (it == index.end()) return std::nullopt;
    return it->second;
  };
  // Both sorted by name: the first difference reported is the same every time.
  std::map<std::string_view, bool> names;
  for (const auto& [name, value] : warm_index) names.emplace(name, true);
  for (const auto& [name, value] : worker_index) names.emplace(name, true);
  for (const auto& [name, unused] : names) {
    const auto in_warm = lookup(warm_index, name);
    const auto in_worker = lookup(worker_index, name);
    if (in_warm != in_worker) {
      return std::string(name) + " is " + Shown(in_worker) + " for this worker but was " +
             Shown(in_warm) + " when the warm process imported its modules (it is read at import)";
    }
  }
  return std::nullopt;
}

}  // namespace muster
