// Helpers shared by the launcher's unit tests (launcher_* and cli_*).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "launcher/plan/gpu_ids.h"

namespace muster::testing {

// An environment holding exactly `vars`.
inline EnvLookup EnvOf(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

}  // namespace muster::testing
